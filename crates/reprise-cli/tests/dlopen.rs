//! Libraries the program loads itself with `dlopen` are hashed into the trace (issue 13), as
//! its linked libraries are: unchanged, the replay verifies with the recorded output; rebuilt
//! with a change between record and replay, the replay is refused (125, one `reprise:` line
//! naming it) before the program runs. In full mode and in sync mode (whose runtime, a
//! preloaded .so, is not listed as a library of the program's).

mod common;
use common::*;
use reprise_trace::TraceReader;
use std::process::Command;

/// Loads `./libplugin.so` (relative: the runtime makes it absolute) and sums its value under a
/// lock in two threads.
const MAIN: &str = r#"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;
static int (*value)(void);
static void *work(void *arg) {
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&mu);
        total += value();
        pthread_mutex_unlock(&mu);
    }
    return arg;
}
int main(void) {
    void *h = dlopen("./libplugin.so", RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 3; }
    value = (int (*)(void))dlsym(h, "plugin_value");
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("total %ld\n", total);
    return 0;
}
"#;

/// Build the program: with `reprise cc` (full mode) or plain gcc (sync mode).
fn build_main(w: &Work, full: bool) {
    std::fs::write(w.path("uses_plugin.c"), MAIN).unwrap();
    let args = [
        "-O2",
        "-g",
        "-o",
        "uses_plugin",
        "uses_plugin.c",
        "-ldl",
        "-pthread",
    ];
    let o = if full {
        w.cmd().arg("cc").args(args).output().unwrap()
    } else {
        Command::new("gcc")
            .current_dir(w.dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn changed_plugin_is_refused(full: bool) {
    let w = Work::new();
    w.build_value_lib("plugin", 1);
    build_main(&w, full);
    let r = record(&w, "uses_plugin", &[], "plugin.trace", &[]);
    assert_eq!(r.status, 0, "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(r.stdout, b"total 2000\n");
    // The footer lists the plugin (absolute), with a hash, and nothing loaded at start: not
    // libc, not the runtime's own .so in sync mode.
    let footer = TraceReader::open(&r.trace).unwrap().read_all().unwrap().2;
    let names: Vec<String> = footer
        .dlopened
        .iter()
        .map(|(p, _)| String::from_utf8_lossy(p).into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        names[0].starts_with('/') && names[0].ends_with("/libplugin.so"),
        "{names:?}"
    );
    assert_eq!(footer.dlopened[0].1.len(), 16, "{:?}", footer.dlopened);
    let o = w.cmd().arg("info").arg(&r.trace).output().unwrap();
    let info = String::from_utf8_lossy(&o.stdout);
    assert!(
        info.contains(&format!("dlopened:    {} (hash ", names[0])),
        "{info}"
    );

    // Unchanged: verified with the recorded output, no warning.
    replay_verified(&w, &r, How::Plain);
    let o = w.cmd().arg("replay").arg(&r.trace).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("warning"), "{err}");

    // Rebuilt with a change: refused before the program runs, naming the library.
    w.build_value_lib("plugin", 2);
    let err = replay_rejected(&w, &r.trace);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("reprise:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with(&format!(
            "reprise: the shared library {} (loaded by the program with dlopen) changed since the recording",
            names[0]
        )),
        "{err}"
    );
    assert!(!err.contains("total"), "the program ran: {err}");
}

#[test]
fn full_mode_a_changed_dlopened_library_is_refused() {
    changed_plugin_is_refused(true);
}

#[test]
fn sync_mode_a_changed_dlopened_library_is_refused() {
    changed_plugin_is_refused(false);
}

/// The runtime's `dlopen` leaves glibc the program's call site as the caller: a library found
/// through the program's own RUNPATH (`$ORIGIN/sub`, searched only for the calling object) is
/// found in sync mode, whose runtime is another object, and replays verified.
#[test]
fn sync_mode_dlopen_by_name_uses_the_programs_runpath() {
    let w = Work::new();
    std::fs::create_dir(w.path("sub")).unwrap();
    std::fs::write(w.path("p.c"), "int plugin_value(void) { return 7; }\n").unwrap();
    std::fs::write(
        w.path("by_name.c"),
        r#"
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
    void *h = dlopen("libplugin.so", RTLD_NOW);
    if (!h) { printf("dlopen failed: %s\n", dlerror()); return 3; }
    printf("value %d\n", ((int (*)(void))dlsym(h, "plugin_value"))());
    return 0;
}
"#,
    )
    .unwrap();
    for args in [
        &["-shared", "-fPIC", "-o", "sub/libplugin.so", "p.c"][..],
        &[
            "-O2",
            "-o",
            "by_name",
            "by_name.c",
            "-ldl",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/sub",
        ][..],
    ] {
        let o = Command::new("gcc")
            .current_dir(w.dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let r = record(&w, "by_name", &[], "by_name.trace", &[]);
    assert_eq!(r.stdout, b"value 7\n");
    assert_eq!(r.status, 0);
    let footer = TraceReader::open(&r.trace).unwrap().read_all().unwrap().2;
    assert_eq!(footer.dlopened.len(), 1, "{:?}", footer.dlopened);
    assert!(footer.dlopened[0].0.ends_with(b"/sub/libplugin.so"));
    replay_verified(&w, &r, How::Plain);
}
