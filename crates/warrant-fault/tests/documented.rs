//! `docs/ARCHITECTURE.md` lists every fault point, and only those.

#![allow(clippy::unwrap_used, reason = "tests")]

use warrant_fault::FaultPoint;

#[test]
fn the_architecture_lists_exactly_the_fault_points() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md"),
    )
    .unwrap();
    let table = doc
        .split("| Point | Where the process stops |")
        .nth(1)
        .expect("the fault points' table");
    let listed: Vec<&str> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    let points: Vec<&str> = FaultPoint::ALL.iter().map(|p| p.name()).collect();
    assert_eq!(listed, points);
}
