//! Compiles the C part of the runtime (variadic and bulk libc interposers, `csrc/shim_*.c`,
//! one file per concern; `csrc/shim.h` says which) into the staticlib.
const SOURCES: &[&str] = &[
    "csrc/shim_stdio.c",
    "csrc/shim_process.c",
    "csrc/shim_fdio.c",
    "csrc/shim_fdalloc.c",
    "csrc/shim_copy.c",
    "csrc/shim_sysinfo.c",
    "csrc/shim_ipc.c",
    "csrc/shim_omp.c",
    "csrc/shim_fs.c",
    "csrc/shim_net.c",
    "csrc/shim_threads.c",
    "csrc/shim_names.c",
    "csrc/shim_dl.c",
    "csrc/shim_child.c",
];

fn main() {
    println!("cargo:rerun-if-changed=csrc/shim.h");
    for s in SOURCES {
        println!("cargo:rerun-if-changed={s}");
    }
    cc::Build::new()
        .files(SOURCES)
        .opt_level(2)
        .flag("-fno-builtin")
        .flag("-fno-delete-null-pointer-checks")
        .flag("-Wno-nonnull-compare")
        // Forced unwinds (pthread_exit, cancellation) pass through the C interposers and the
        // thread trampoline, and run their cleanups.
        .flag("-fexceptions")
        .warnings(true)
        .compile("reprise_shim");
}
