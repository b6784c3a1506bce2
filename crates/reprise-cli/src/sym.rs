//! Source lines for code addresses of the recorded program, from its DWARF (in the launcher,
//! never in the traced process). Addresses are deterministic (ASLR is off), so a position-
//! independent executable is always loaded at the kernel's fixed base.

use std::path::Path;

/// Where the kernel maps a position-independent executable when ASLR is off (x86_64).
const PIE_BASE: u64 = 0x5555_5555_4000;

/// The program's debug information.
pub struct Symbolizer {
    loader: addr2line::Loader,
    /// Subtracted from a run-time address to get the file's address.
    bias: u64,
}

impl Symbolizer {
    /// Load `exe`'s debug information; None when the file cannot be read as an ELF file.
    pub fn new(exe: &Path) -> Option<Symbolizer> {
        let data = std::fs::read(exe).ok()?;
        let file = object::File::parse(&*data).ok()?;
        use object::Object;
        let bias = if file.kind() == object::ObjectKind::Dynamic {
            PIE_BASE
        } else {
            0
        };
        let loader = addr2line::Loader::new(exe).ok()?;
        Some(Symbolizer { loader, bias })
    }

    /// Function and source line of a code address; None when it is not in the program.
    pub fn place(&self, addr: u64) -> Option<Place> {
        let probe = addr.checked_sub(self.bias)?;
        let mut p = Place::default();
        if let Ok(mut frames) = self.loader.find_frames(probe) {
            // The innermost frame: the inlined function the code belongs to, and its line.
            if let Ok(Some(f)) = frames.next() {
                p.func = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok().map(|s| s.into_owned()));
                if let Some(l) = f.location.as_ref() {
                    p.file = l.file.map(str::to_string);
                    p.line = l.line;
                }
            }
        }
        if p.func.is_none() {
            p.func = self.loader.find_symbol(probe).map(str::to_string);
        }
        (p.func.is_some() || p.file.is_some()).then_some(p)
    }

    /// The first address of a stack (innermost first) that is in the program's own code, not
    /// in reprise's runtime (Rust, its C shim, the `__tsan_*` callbacks) nor in a library:
    /// (address, its place). `first_exact`: the first address is an instruction (a fault's),
    /// the others return addresses, looked up at the call or access just before them.
    pub fn program_frame(&self, pcs: &[u64], first_exact: bool) -> Option<(u64, Place)> {
        pcs.iter().enumerate().find_map(|(i, &pc)| {
            let probe = if i == 0 && first_exact {
                pc
            } else {
                pc.checked_sub(1)?
            };
            let p = self.place(probe)?;
            (!p.is_runtime()).then_some((pc, p))
        })
    }
}

/// A function and source line.
#[derive(Debug, Default, Clone)]
pub struct Place {
    /// Function (demangled), innermost inlined one.
    pub func: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
}

impl Place {
    /// Code of reprise's runtime linked into the program.
    fn is_runtime(&self) -> bool {
        let f = self.func.as_deref().unwrap_or("");
        let file = self.file.as_deref().unwrap_or("");
        f.starts_with("__tsan_")
            || f.starts_with("reprise")
            || f.starts_with("core::")
            || file.ends_with(".rs")
            || is_runtime_c(file)
            || self.file.is_none()
    }
}

/// A C source of the runtime (`crates/reprise-rt/csrc/`: `shim.h` and `shim_*.c`).
fn is_runtime_c(file: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file);
    name == "shim.h" || (name.starts_with("shim_") && name.ends_with(".c"))
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.func, &self.file) {
            (Some(func), Some(file)) => write!(f, "{func} at {file}")?,
            (None, Some(file)) => write!(f, "{file}")?,
            (Some(func), None) => return write!(f, "{func}"),
            (None, None) => return Ok(()),
        }
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        Ok(())
    }
}

/// The recorded program's file, for its debug information: the recorded exec path, taken
/// relative to the recorded working directory when it is relative.
pub fn recorded_exe(h: &reprise_trace::Header) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let exe = Path::new(std::ffi::OsStr::from_bytes(&h.exe_path));
    Path::new(std::ffi::OsStr::from_bytes(&h.cwd)).join(exe)
}

/// "0xPC (function at file:line)" for the program's frame of a reported stack, if any.
pub fn stack_place(exe: &Path, pcs: &[u64], first_exact: bool) -> Option<String> {
    let sym = Symbolizer::new(exe)?;
    let (pc, p) = sym.program_frame(pcs, first_exact)?;
    Some(format!("{pc:#x} ({p})"))
}

/// Read `len` bytes of process `pid` at `addr` (fewer at the end of a mapping).
fn read_remote(pid: i32, addr: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: reads at most `len` bytes of our child into `buf`; a bad address fails cleanly.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    buf.truncate(n.max(0) as usize);
    buf
}

/// Whether the instruction just before `ret` in process `pid` is a call out of the program
/// (so `ret` is the return address of the program's call into the runtime or a library):
/// `e8 rel32` whose target is not the program's own code, or an indirect `ff /2` call with a
/// 0, 1 or 4-byte displacement.
fn calls_out(sym: &Symbolizer, pid: i32, ret: u64) -> bool {
    let b = read_remote(pid, ret.saturating_sub(7), 7);
    if b.len() != 7 {
        return false;
    }
    if b[2] == 0xe8 {
        let rel = i32::from_le_bytes([b[3], b[4], b[5], b[6]]) as i64;
        let target = (ret as i64).wrapping_add(rel) as u64;
        return sym.place(target).is_none_or(|p| p.is_runtime());
    }
    let call_ff = |i: usize| b[i] == 0xff && (b[i + 1] >> 3) & 7 == 2;
    call_ff(5) || call_ff(4) || call_ff(1) || call_ff(0)
}

/// Where a thread of process `pid` blocked in a system call was called from in the program:
/// its user stack pointer (from `/proc/PID/task/TID/syscall`) and a scan of its stack upwards
/// for the first return address into the program's own code after a call out of it (a
/// heuristic: a stale word on the stack can mislead it; unwinding with the CFI would not).
pub fn blocked_call_site(sym: &Symbolizer, pid: i32, ktid: u32) -> Option<(u64, Place)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{ktid}/syscall")).ok()?;
    let f: Vec<&str> = s.split_whitespace().collect();
    if f.len() < 3 {
        return None;
    }
    let sp = u64::from_str_radix(f[f.len() - 2].trim_start_matches("0x"), 16).ok()?;
    let stack = read_remote(pid, sp & !7, 256 * 1024);
    stack.chunks_exact(8).find_map(|w| {
        let a = u64::from_le_bytes(w.try_into().ok()?);
        let p = sym.place(a.checked_sub(1)?)?;
        (!p.is_runtime() && calls_out(sym, pid, a)).then_some((a, p))
    })
}
