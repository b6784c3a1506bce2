//! Compiles the C part of the runtime (variadic and bulk libc interposers) into the staticlib.
fn main() {
    println!("cargo:rerun-if-changed=csrc/libc_shim.c");
    cc::Build::new()
        .file("csrc/libc_shim.c")
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
