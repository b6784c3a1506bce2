//! The recorded program's shared libraries are hashed into the trace (issue 13): a library
//! rebuilt with a change since the recording makes the replay refuse (125, one `reprise:` line
//! naming it); a trace without the list replays with a warning that they cannot be checked.

mod common;
use common::*;
use reprise_trace::{TraceReader, TraceWriter};
use std::time::Duration;

const MAIN: &str = r#"
#include <pthread.h>
#include <stdio.h>
int shim_value(void);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;
static void *work(void *arg) {
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&mu);
        total += shim_value();
        pthread_mutex_unlock(&mu);
    }
    return arg;
}
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("total %ld\n", total);
    return 0;
}
"#;

/// Built with `-x c` before the source, as configure scripts do: the language must not reach
/// the runtime archive `reprise cc` appends (gcc read it as C source and never ended).
fn build_main(w: &Work) {
    std::fs::write(w.path("uses_shim.c"), MAIN).unwrap();
    let mut c = w.cmd();
    c.args([
        "cc",
        "-O2",
        "-g",
        "-o",
        "uses_shim",
        "-x",
        "c",
        "uses_shim.c",
        "-L.",
    ])
    .args(["-lshim", "-Wl,-rpath,$ORIGIN", "-pthread"]);
    let o = run_limited(c, Duration::from_secs(300));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn replay(w: &Work, trace: &std::path::Path) -> (i32, String) {
    let mut c = w.cmd();
    c.arg("replay").arg(trace);
    let o = run_limited(c, Duration::from_secs(120));
    (
        shell_status(&o),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_changed_shared_library_is_refused() {
    let w = Work::new();
    w.build_value_lib("shim", 1);
    build_main(&w);
    let r = record(&w, "uses_shim", &[], "shim.trace", &[]);
    assert_eq!(r.status, 0);
    assert_eq!(r.stdout, b"total 2000\n");
    // The header lists it (and libc) with their hashes; `info` shows them.
    let h = TraceReader::open(&r.trace).unwrap().header().clone();
    let libs = h.libs.clone().expect("no library list");
    assert!(
        libs.iter().any(|(p, _)| p.ends_with(b"/libshim.so")),
        "{libs:?}"
    );
    assert!(
        libs.iter().any(|(p, _)| p.windows(4).any(|w| w == b"libc")),
        "{libs:?}"
    );
    let o = w.cmd().arg("info").arg(&r.trace).output().unwrap();
    let info = String::from_utf8_lossy(&o.stdout);
    assert!(
        info.contains("library:") && info.contains("libshim.so"),
        "{info}"
    );
    // Unchanged: verified, no warning.
    let (status, err) = replay(&w, &r.trace);
    assert_eq!(status, 0, "{err}");
    assert!(err.contains("reprise: replay verified ("), "{err}");
    assert!(!err.contains("warning"), "{err}");

    // A trace without the list: replayed, with a warning.
    let (mut header, chunks, footer) = TraceReader::open(&r.trace).unwrap().read_all().unwrap();
    header.libs = None;
    let nolist = w.path("nolist.trace");
    let mut t = TraceWriter::new(std::fs::File::create(&nolist).unwrap(), &header).unwrap();
    for c in &chunks {
        t.write_chunk(c.kind, &c.data).unwrap();
    }
    t.finish(&footer).unwrap();
    let (status, err) = replay(&w, &nolist);
    assert_eq!(status, 0, "{err}");
    assert!(
        err.contains("reprise: warning: the trace does not list the program's shared libraries"),
        "{err}"
    );

    // Rebuilt with a change: refused before anything runs, naming the library.
    w.build_value_lib("shim", 2);
    let err = replay_rejected(&w, &r.trace);
    let lib = w.path("libshim.so");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("reprise:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with(&format!(
            "reprise: the shared library {} changed since the recording",
            lib.display()
        )),
        "{err}"
    );
    assert!(!err.contains("total"), "the program ran: {err}");
}
