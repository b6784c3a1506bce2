//! File descriptors and fixed addresses shared by the launcher and the runtime, sizes, and
//! sentinel values that cross crates.

/// Config memfd (launcher -> runtime).
pub const FD_CONFIG: i32 = 1000;
/// Event pipe (runtime -> launcher).
pub const FD_CHANNEL: i32 = 1001;
/// Shared status memfd (runtime <-> launcher watchdog).
pub const FD_STATUS: i32 = 1002;
/// The launcher's own stderr, for the runtime's messages (never mixed into the program's).
pub const FD_LOG: i32 = 1003;

/// Base of the address region reserved for the runtime; every mapping the runtime makes lives
/// at a fixed address above it, identical in record and replay.
pub const REGION_BASE: u64 = 0x1000_0000_0000;
/// Where the config memfd is mapped.
pub const CONFIG_ADDR: u64 = REGION_BASE;
/// Maximal size of the config mapping (address space reserved, not memory).
pub const CONFIG_MAX: u64 = 0x0800_0000_0000; // 8 TiB of address space
/// Where the status memfd is mapped.
pub const STATUS_ADDR: u64 = 0x1900_0000_0000;
/// Number of thread slots (deterministic thread ids are below this).
pub const MAX_THREADS: usize = 4096;

/// Number of address stripes of the access vectors (LEAP Corollary 2: stripes are sound).
pub const STRIPES: usize = 16384;
/// A stripe id that names no stripe.
pub const NO_STRIPE: u32 = u32::MAX;

/// The pseudo-stripe folded into a thread's digest for a ranged access (memcpy, memset,
/// memmove, struct copies), which takes several stripes at once: above every real stripe.
pub const RANGE_STRIPE: u64 = 0xffff;
const _: () = assert!(RANGE_STRIPE as usize >= STRIPES);

/// Magic at the start of the config memfd.
pub const CONFIG_MAGIC: u64 = 0x5245_5052_4953_4543; // "REPRISEC"
