//! Conversions between integers and floats where rounding is intended: costs, timings and
//! figures. Float-to-integer conversions saturate, as Rust's `as` does: NaN and negatives
//! give 0, values past the range give its end. And integers written as decimal text without
//! a formatter, for the paths every step takes.

/// `n`'s decimal digits, written into `buf` (no allocation, no formatter).
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        if let Some(d) = buf.get_mut(at) {
            // `n % 10` is a digit.
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    // ASCII digits only.
    std::str::from_utf8(buf.get(at..).unwrap_or_default()).unwrap_or("0")
}

/// An integer JSON number's text as serde_json writes it (`-` if negative, then its decimal
/// digits), written into `buf`; `None` for a float.
pub fn integer_text<'b>(n: &serde_json::Number, buf: &'b mut [u8; 21]) -> Option<&'b str> {
    let (negative, magnitude) = match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => (false, u),
        (None, Some(i)) => (true, i.unsigned_abs()),
        (None, None) => return None,
    };
    let mut digits = [0u8; 20];
    let digits = decimal(magnitude, &mut digits);
    let start = buf.len() - digits.len() - usize::from(negative);
    let text = buf.get_mut(start..)?;
    let (sign, rest) = text.split_at_mut(usize::from(negative));
    sign.fill(b'-');
    rest.copy_from_slice(digits.as_bytes());
    std::str::from_utf8(buf.get(start..)?).ok()
}

/// `n` as a float: exact below 2^53, the nearest float above.
#[expect(
    clippy::cast_precision_loss,
    reason = "rounding past 2^53 is intended: costs, timings and figures"
)]
pub fn to_f64(n: u64) -> f64 {
    n as f64
}

/// `x` truncated toward zero, saturating: NaN and negatives give 0, past `u64::MAX` gives it.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "the float-to-integer conversion saturates, as intended here"
)]
pub fn to_u64(x: f64) -> u64 {
    x as u64
}

/// `x` truncated toward zero, saturating: NaN gives 0, values past the range give its ends.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the float-to-integer conversion saturates, as intended here"
)]
pub fn to_i64(x: f64) -> i64 {
    x as i64
}
