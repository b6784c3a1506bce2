//! `rdtsc`/`rdtscp` trapped (`PR_SET_TSC`) so the time-stamp counter is a recorded input:
//! the SIGSEGV the trap raises is emulated here, and the trap is lifted around fork, exec and
//! spawn so other programs do not die of it.
#![allow(unsafe_code)]

use crate::access;
use crate::state;
use crate::sys;
use core::sync::atomic::Ordering;

/// If the fault is a trapped `rdtsc`/`rdtscp`, emulate it: the value is a recorded input.
/// Returns true when handled (the instruction is skipped).
pub fn emulate_tsc(ctx: *mut libc::c_void) -> bool {
    if ctx.is_null() {
        return false;
    }
    // SAFETY: ctx is the kernel's ucontext for this synchronous SIGSEGV; RIP points at the
    // faulting instruction in the program's (readable) text.
    let uc = unsafe { &mut *(ctx as *mut libc::ucontext_t) };
    let g = &mut uc.uc_mcontext.gregs;
    let rip = g[libc::REG_RIP as usize] as usize;
    let insn = unsafe { core::ptr::read_unaligned(rip as *const [u8; 3]) };
    let len = match insn {
        [0x0f, 0x31, _] => 2,
        [0x0f, 0x01, 0xf9] => 3,
        _ => return false,
    };
    // The vDSO's clock_gettime reads the TSC itself, a number of times that depends on
    // timing (its seqcount retries): run those natively, unrecorded. Clock reads are recorded
    // at the clock_gettime interposer instead.
    // SAFETY: getauxval has no preconditions.
    let vdso = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    let from_vdso = vdso != 0 && (vdso..vdso + 0x4000).contains(&rip);
    let mut entry = if from_vdso {
        None
    } else {
        crate::entry::enter()
    };
    let (v, aux) = match &mut entry {
        None => {
            let (v, aux) = read_tsc(len);
            (v, aux as u64)
        }
        Some(e) => {
            let t = e.t();
            access::fold_pending(t);
            if state::REPLAY.load(Ordering::Relaxed) {
                (access::result(t, None), access::result(t, None))
            } else {
                let (v, aux) = read_tsc(len);
                (
                    access::result(t, Some(v)),
                    access::result(t, Some(aux as u64)),
                )
            }
        }
    };
    drop(entry);
    g[libc::REG_RAX as usize] = (v & 0xffff_ffff) as i64;
    g[libc::REG_RDX as usize] = (v >> 32) as i64;
    if len == 3 {
        g[libc::REG_RCX as usize] = aux as u32 as i64;
    }
    g[libc::REG_RIP as usize] = (rip + len) as i64;
    true
}

/// Read the TSC natively (`rdtsc` for the 2-byte instruction, `rdtscp` for the 3-byte one),
/// lifting the trap for this thread only for the instant of the read.
fn read_tsc(len: usize) -> (u64, u32) {
    // The two `prctl` calls come from the fault handler, in the program's context: Syscall
    // User Dispatch trapped each (a SIGSYS, a safe point), at every clock read of the vDSO
    // (sysbench memory, a clock read per operation: 0.99 s recorded against 0.03 s native).
    // Allowed for the instant.
    crate::sud::allowing(|| read_tsc_untrapped(len))
}

/// [`read_tsc`], its system calls allowed.
fn read_tsc_untrapped(len: usize) -> (u64, u32) {
    let mut aux = 0u32;
    reprise_tsc_trap(0);
    // SAFETY: the TSC is enabled for this thread; both instructions exist on x86_64.
    let v = unsafe {
        if len == 2 {
            core::arch::x86_64::_rdtsc()
        } else {
            core::arch::x86_64::__rdtscp(&mut aux)
        }
    };
    reprise_tsc_trap(1);
    (v, aux)
}

/// Trap `rdtsc` in the calling thread (1) or not (0). The setting is inherited by child
/// processes and kept across exec, so it is lifted around fork/exec/spawn: another program
/// must not die of our trap.
#[no_mangle]
pub extern "C" fn reprise_tsc_trap(on: i32) {
    let m = state::mode();
    if on != 0 && !(m == state::M_RECORD || m == state::M_REPLAY) {
        return;
    }
    sys::tsc_trap(on != 0);
}

/// A clock read for the C interposers (`clock_gettime`, `gettimeofday`, `shim_process.c`):
/// system call `nr` with two arguments, made with Syscall User Dispatch allowing it; the raw
/// result (a negative errno on failure). Not the vDSO: it reads the time-stamp counter, which
/// the runtime traps, a fault and two `prctl` calls per read (sysbench memory, a clock read per
/// operation: 0.37 s recorded against 0.03 s native that way). The value is recorded by the
/// caller as before; not a safe point.
#[no_mangle]
pub extern "C" fn reprise_clock_syscall(nr: i64, a1: u64, a2: u64) -> i64 {
    // SAFETY: a clock system call with the caller's clock id and output pointer (valid as the
    // libc function the caller interposes requires).
    crate::sud::allowing(|| unsafe { sys::syscall6(nr, a1, a2, 0, 0, 0, 0) })
}
