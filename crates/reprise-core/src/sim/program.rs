//! Random programs: threads of reads, writes, RMWs, critical sections, forks and joins.

/// SplitMix64: a small deterministic generator, stable across versions (seeds in tests stay valid).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// True with probability `pct`%.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// The SplitMix64 finaliser, used as the value function of programs.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A program operation; threads are program indices (0 = main).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum POp {
    /// Read a location.
    Read(u64),
    /// Write a location (value from what the thread read so far).
    Write(u64),
    /// Atomic read-modify-write.
    Rmw(u64),
    /// Acquire a lock.
    Acquire(u64),
    /// Release a lock.
    Release(u64),
    /// Start the given program thread.
    Fork(usize),
    /// Wait for the given program thread to finish.
    Join(usize),
}

/// A program: per thread, its operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// Operations of each thread; thread 0 runs first, the others when forked.
    pub threads: Vec<Vec<POp>>,
}

impl Program {
    /// Total number of operations.
    pub fn len(&self) -> usize {
        self.threads.iter().map(|t| t.len()).sum()
    }
    /// True when no thread has any operation.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Shape of generated programs.
#[derive(Clone, Copy, Debug)]
pub struct GenConfig {
    /// Maximum number of threads (at least 2 are generated).
    pub max_threads: u64,
    /// Number of shared locations.
    pub locs: u64,
    /// Number of locks (0: no critical sections).
    pub locks: u64,
    /// Maximum number of segments (an access or a critical section) per thread.
    pub max_segments: u64,
    /// Percentage of accesses that are RMWs.
    pub rmw_pct: u64,
    /// Percentage of segments that are critical sections.
    pub lock_pct: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_threads: 4,
            locs: 3,
            locks: 2,
            max_segments: 5,
            rmw_pct: 10,
            lock_pct: 25,
        }
    }
}

/// Generate a random program.
pub fn generate(rng: &mut Rng, cfg: &GenConfig) -> Program {
    let n = 2 + rng.below(cfg.max_threads.max(2) - 1) as usize;
    let parent: Vec<usize> = (0..n)
        .map(|i| {
            if i == 0 {
                0
            } else {
                rng.below(i as u64) as usize
            }
        })
        .collect();
    let mut segs: Vec<Vec<Vec<POp>>> = Vec::new();
    for _ in 0..n {
        let k = 1 + rng.below(cfg.max_segments.max(1));
        let mut s = Vec::new();
        for _ in 0..k {
            let access = |rng: &mut Rng| {
                let x = rng.below(cfg.locs.max(1));
                let r = rng.below(100);
                if r < cfg.rmw_pct {
                    POp::Rmw(x)
                } else if r < cfg.rmw_pct + (100 - cfg.rmw_pct) / 2 {
                    POp::Read(x)
                } else {
                    POp::Write(x)
                }
            };
            if cfg.locks > 0 && rng.chance(cfg.lock_pct) {
                let m = rng.below(cfg.locks);
                let mut cs = vec![POp::Acquire(m)];
                for _ in 0..1 + rng.below(2) {
                    cs.push(access(rng));
                }
                cs.push(POp::Release(m));
                s.push(cs);
            } else {
                s.push(vec![access(rng)]);
            }
        }
        segs.push(s);
    }
    // Fork and join positions (segment boundaries) in the parent.
    let mut at: Vec<Vec<(usize, POp)>> = vec![Vec::new(); n];
    for (c, &p) in parent.iter().enumerate().skip(1) {
        let b = rng.below(segs[p].len() as u64 + 1) as usize;
        at[p].push((b, POp::Fork(c)));
        if rng.chance(70) {
            let j = b + rng.below((segs[p].len() - b) as u64 + 1) as usize;
            at[p].push((j, POp::Join(c)));
        }
    }
    let mut threads = Vec::new();
    for t in 0..n {
        let mut ops = Vec::new();
        for i in 0..=segs[t].len() {
            for &(b, op) in &at[t] {
                if b == i && matches!(op, POp::Fork(_)) {
                    ops.push(op);
                }
            }
            for &(b, op) in &at[t] {
                if b == i && matches!(op, POp::Join(_)) {
                    ops.push(op);
                }
            }
            if i < segs[t].len() {
                ops.extend(segs[t][i].iter().copied());
            }
        }
        threads.push(ops);
    }
    Program { threads }
}
