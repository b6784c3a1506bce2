//! A debug build of the runtime works (issue 13): overflow checks on, debug assertions on.
//! Builds `reprise-rt` in the dev profile, links a racy test program with it (`REPRISE_RUNTIME`),
//! records it and replays it verified.

mod common;
use common::*;
use std::process::Command;

#[test]
fn debug_runtime_records_and_replays() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let o = Command::new(cargo)
        .current_dir(root())
        .args(["build", "-p", "reprise-rt", "--message-format", "short"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "building the debug runtime failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let lib = target.join("debug/libreprise_rt.a");
    assert!(lib.exists(), "{} missing", lib.display());
    let p = program("counter_race");
    let w = Work::new();
    let out = "counter_race-debug-rt";
    let o = w
        .cmd()
        .env("REPRISE_RUNTIME", &lib)
        .args(["cc", "-O1", "-g", "-o", out])
        .arg(&p.source)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for k in 0..3 {
        let r = record(&w, out, &p.args, &format!("d{k}.trace"), &[]);
        assert_eq!(
            r.status,
            0,
            "the debug runtime's recording failed: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        replay_verified(&w, &r, How::Plain);
    }
}
