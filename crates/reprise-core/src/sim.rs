//! A simulator that needs no C compiler: random programs, a random recorded interleaving, and a
//! replay under an adversarial scheduler that at every step picks randomly among the threads the
//! strategy (and the program's own semantics: locks, joins) allows.
//!
//! Programs have threads (thread 0 is main; the others are forked, possibly by other children),
//! shared locations, non-nested critical sections and joins of children by their parents. Every
//! written value is computed from the values the thread read before, so a wrong order changes
//! later values. A program's control flow does not depend on values, so a replay runs the same
//! events and the recording and the replay can be compared event by event.
//!
//! The recording is atomic per event (the recorded order is the execution order). Replay models
//! the substrate in one of two ways ([`Substrate`]): `Split`, the real one, where the callback for
//! access k and access k are separate steps and other threads may run between them; and `Atomic`,
//! where both happen in one step (as under Pin, which serialises analysis and instruction; seeds
//! 000 and 003 ran there). Replay threads get ids by creation order, mapped to recorded ids with
//! the thread matcher of [`crate::threads`].

use crate::event::{Event, Op, ThreadId};
use crate::strategy::{LogSize, Recorder, Replayer, Strategy};
use crate::threads::{ThreadMatcher, ThreadTable};
use std::collections::{BTreeMap, HashMap};

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

/// Picks which thread moves next among the allowed ones (program thread indices).
pub trait Scheduler {
    /// Index into `choices` (non-empty).
    fn pick(&mut self, choices: &[usize]) -> usize;
}

/// Uniformly random choice.
#[derive(Clone, Debug)]
pub struct RandomScheduler(pub Rng);

impl Scheduler for RandomScheduler {
    fn pick(&mut self, choices: &[usize]) -> usize {
        self.0.below(choices.len() as u64) as usize
    }
}

/// Follows a script of program thread indices; when the scripted thread cannot move (or the script
/// is exhausted) it takes the first allowed thread.
#[derive(Clone, Debug)]
pub struct ScriptedScheduler {
    /// The script.
    pub script: Vec<usize>,
    pos: usize,
}

impl ScriptedScheduler {
    /// A scheduler following `script`.
    pub fn new(script: Vec<usize>) -> Self {
        ScriptedScheduler { script, pos: 0 }
    }
}

impl Scheduler for ScriptedScheduler {
    fn pick(&mut self, choices: &[usize]) -> usize {
        let want = self.script.get(self.pos).copied();
        self.pos += 1;
        want.and_then(|w| choices.iter().position(|&c| c == w))
            .unwrap_or(0)
    }
}

/// How replay models the substrate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Substrate {
    /// Callback and access in one step.
    Atomic,
    /// Callback (gate and bookkeeping) and access are separate steps, as on real threads.
    Split,
}

/// One access to a location as observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Program thread.
    pub thread: usize,
    /// Index of the operation in that thread.
    pub index: usize,
    /// True for writes and RMWs.
    pub write: bool,
    /// Value read (reads, RMWs) or written (writes).
    pub value: u64,
}

/// What a run did: per-location access orders, values read, lock orders.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    /// Accesses per location in execution order.
    pub locs: BTreeMap<u64, Vec<Access>>,
    /// Values read (reads and RMWs) per program thread, in program order.
    pub reads: Vec<Vec<u64>>,
    /// Acquiring program threads per lock, in order.
    pub locks: BTreeMap<u64, Vec<usize>>,
    /// Program thread of every step taken.
    pub schedule: Vec<usize>,
    /// Every thread ran to its end.
    pub completed: bool,
    /// A replay thread was matched to the wrong recorded thread.
    pub identity_mismatch: bool,
}

/// A recording: the strategy's log, the thread table and the ground truth.
#[derive(Clone, Debug)]
pub struct Recording<L> {
    /// The strategy's log.
    pub log: L,
    /// Thread abstraction `<a,b>` (seed 000 5.4 / seed 003 algorithm 3).
    pub table: ThreadTable,
    /// Recorded id of each program thread.
    pub rec_id: Vec<ThreadId>,
    /// Events in execution order, as the recorder saw them.
    pub events: Vec<Event>,
    /// Ground truth.
    pub obs: Observation,
}

impl<L: LogSize> Recording<L> {
    /// Log size in bytes, plus the thread table when the strategy logs one.
    pub fn size_bytes(&self, with_table: bool) -> usize {
        self.log.size_bytes()
            + if with_table {
                self.table.size_bytes()
            } else {
                0
            }
    }
}

struct Machine<'p> {
    prog: &'p Program,
    pc: Vec<usize>,
    started: Vec<bool>,
    finished: Vec<bool>,
    acc: Vec<u64>,
    mem: HashMap<u64, u64>,
    owner: HashMap<u64, usize>,
    obs: Observation,
}

impl<'p> Machine<'p> {
    fn new(prog: &'p Program) -> Self {
        let n = prog.threads.len();
        let mut started = vec![false; n];
        started[0] = true;
        Machine {
            prog,
            pc: vec![0; n],
            started,
            finished: vec![false; n],
            acc: (0..n).map(|i| mix(0xACC0 + i as u64)).collect(),
            mem: HashMap::new(),
            owner: HashMap::new(),
            obs: Observation {
                reads: vec![Vec::new(); n],
                ..Default::default()
            },
        }
    }
    fn live(&self, p: usize) -> bool {
        self.started[p] && !self.finished[p]
    }
    fn next(&self, p: usize) -> Option<POp> {
        self.prog.threads[p].get(self.pc[p]).copied()
    }
    /// Program semantics: may the access happen now?
    fn enabled(&self, op: POp) -> bool {
        match op {
            POp::Acquire(m) => !self.owner.contains_key(&m),
            POp::Join(c) => self.finished[c],
            _ => true,
        }
    }
    /// Perform the access of thread `p`; returns the value read or written.
    fn access(&mut self, p: usize) -> u64 {
        let op = self.next(p).expect("live thread has an op");
        let idx = self.pc[p];
        let push = |obs: &mut Observation, x: u64, write: bool, value: u64| {
            obs.locs.entry(x).or_default().push(Access {
                thread: p,
                index: idx,
                write,
                value,
            });
        };
        let v = match op {
            POp::Read(x) => {
                let v = self.mem.get(&x).copied().unwrap_or(0);
                self.acc[p] = mix(self.acc[p] ^ v);
                self.obs.reads[p].push(v);
                push(&mut self.obs, x, false, v);
                v
            }
            POp::Write(x) => {
                let v = mix(self.acc[p].wrapping_add(idx as u64));
                self.mem.insert(x, v);
                push(&mut self.obs, x, true, v);
                v
            }
            POp::Rmw(x) => {
                let old = self.mem.get(&x).copied().unwrap_or(0);
                let new = mix(old ^ self.acc[p] ^ idx as u64);
                self.mem.insert(x, new);
                self.acc[p] = mix(self.acc[p] ^ old);
                self.obs.reads[p].push(old);
                push(&mut self.obs, x, true, old);
                old
            }
            POp::Acquire(m) => {
                self.owner.insert(m, p);
                self.obs.locks.entry(m).or_default().push(p);
                0
            }
            POp::Release(m) => {
                self.owner.remove(&m);
                0
            }
            POp::Fork(c) => {
                self.started[c] = true;
                if self.prog.threads[c].is_empty() {
                    self.finished[c] = true;
                }
                0
            }
            POp::Join(_) => 0,
        };
        self.pc[p] += 1;
        if self.pc[p] >= self.prog.threads[p].len() {
            self.finished[p] = true;
        }
        v
    }
}

fn to_op(op: POp, ids: &[ThreadId]) -> Op {
    match op {
        POp::Read(x) => Op::Read(x),
        POp::Write(x) => Op::Write(x),
        POp::Rmw(x) => Op::Rmw(x),
        POp::Acquire(m) => Op::Acquire(m),
        POp::Release(m) => Op::Release(m),
        POp::Fork(c) => Op::Fork(ids[c]),
        POp::Join(c) => Op::Join(ids[c]),
    }
}

/// Run `prog` under `sched`, recording with strategy `s`.
pub fn record<S: Strategy>(s: &S, prog: &Program, sched: &mut dyn Scheduler) -> Recording<S::Log> {
    let n = prog.threads.len();
    let mut m = Machine::new(prog);
    let mut rec = s.recorder();
    let mut table = ThreadTable::new();
    let mut ids: Vec<ThreadId> = vec![ThreadId::MAX; n];
    ids[0] = 0;
    let mut events = Vec::new();
    if prog.threads[0].is_empty() {
        m.finished[0] = true;
    }
    loop {
        let choices: Vec<usize> = (0..n)
            .filter(|&p| m.live(p) && m.enabled(m.next(p).unwrap()))
            .collect();
        if choices.is_empty() {
            break;
        }
        let p = choices[sched.pick(&choices)];
        m.obs.schedule.push(p);
        let pop = m.next(p).unwrap();
        if let POp::Fork(c) = pop {
            ids[c] = table.on_create(ids[p]);
        }
        let op = to_op(pop, &ids);
        let value = m.access(p);
        let e = Event {
            thread: ids[p],
            op,
            value,
        };
        rec.observe(&e);
        events.push(e);
        if let POp::Fork(c) = pop {
            if m.finished[c] {
                rec.thread_exit(ids[c]);
            }
        }
        if m.finished[p] {
            rec.thread_exit(ids[p]);
        }
    }
    m.obs.completed = m.finished.iter().all(|&f| f);
    Recording {
        log: rec.finish(),
        table,
        rec_id: ids,
        events,
        obs: m.obs,
    }
}

/// Replay `rec` of `prog` with strategy `s` on the given substrate under `sched`.
pub fn replay<S: Strategy>(
    s: &S,
    prog: &Program,
    rec: &Recording<S::Log>,
    substrate: Substrate,
    sched: &mut dyn Scheduler,
) -> Observation {
    let n = prog.threads.len();
    let mut m = Machine::new(prog);
    let mut r = s.replayer(&rec.log);
    let mut matcher = ThreadMatcher::new(&rec.table);
    let mut ids: Vec<ThreadId> = vec![ThreadId::MAX; n];
    ids[0] = 0;
    // Ops are named with the recorded ids of the children (strategies do not use them at replay).
    let op_of = |m: &Machine, p: usize| to_op(m.next(p).unwrap(), &rec.rec_id);
    let mut gated = vec![false; n];
    if prog.threads[0].is_empty() {
        m.finished[0] = true;
        r.thread_exit(0);
    } else {
        r.enter(0, &op_of(&m, 0));
    }
    loop {
        let choices: Vec<usize> = (0..n)
            .filter(|&p| {
                if !m.live(p) {
                    return false;
                }
                let pop = m.next(p).unwrap();
                if gated[p] {
                    m.enabled(pop)
                } else {
                    r.may_proceed(ids[p], &op_of(&m, p))
                        && (substrate == Substrate::Split || m.enabled(pop))
                }
            })
            .collect();
        if choices.is_empty() {
            break;
        }
        let p = choices[sched.pick(&choices)];
        m.obs.schedule.push(p);
        if !gated[p] {
            r.proceed(ids[p], &op_of(&m, p));
            gated[p] = true;
            if substrate == Substrate::Split {
                continue;
            }
        }
        gated[p] = false;
        let pop = m.next(p).unwrap();
        m.access(p);
        if let POp::Fork(c) = pop {
            match matcher.on_create(ids[p]) {
                Some(id) => {
                    ids[c] = id;
                    if id != rec.rec_id[c] {
                        m.obs.identity_mismatch = true;
                    }
                }
                None => m.obs.identity_mismatch = true,
            }
            if m.finished[c] {
                r.thread_exit(ids[c]);
            } else {
                r.enter(ids[c], &op_of(&m, c));
            }
        }
        if m.finished[p] {
            r.thread_exit(ids[p]);
        } else {
            r.enter(ids[p], &op_of(&m, p));
        }
        if m.obs.identity_mismatch {
            break;
        }
    }
    m.obs.completed = m.finished.iter().all(|&f| f) && !m.obs.identity_mismatch;
    m.obs
}

/// How a replay compares with its recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Every thread reached its end (no deadlock, no identity mismatch).
    pub completed: bool,
    /// Every location saw exactly the recorded sequence of accesses (reads among themselves too).
    pub strict_order: bool,
    /// Same write-write, write-read and read-write relations on every location (each access sees
    /// the same number of earlier writes); orders among adjacent reads may differ.
    pub conflict_order: bool,
    /// Every value read is the recorded one.
    pub values: bool,
    /// Every lock was acquired in the recorded order.
    pub lock_order: bool,
}

impl Verdict {
    /// The replay reproduced every interleaving and every value: completed, same conflict order,
    /// same values.
    pub fn exact(&self) -> bool {
        self.completed && self.conflict_order && self.values
    }
}

fn epochs(o: &Observation) -> BTreeMap<(u64, usize, usize), (usize, bool)> {
    let mut out = BTreeMap::new();
    for (&x, v) in &o.locs {
        let mut w = 0;
        for a in v {
            out.insert((x, a.thread, a.index), (w, a.write));
            if a.write {
                w += 1;
            }
        }
    }
    out
}

/// Compare a replay with its recording.
pub fn compare(recorded: &Observation, replayed: &Observation) -> Verdict {
    let key = |o: &Observation| -> BTreeMap<u64, Vec<(usize, usize)>> {
        o.locs
            .iter()
            .map(|(&x, v)| (x, v.iter().map(|a| (a.thread, a.index)).collect()))
            .collect()
    };
    Verdict {
        completed: replayed.completed,
        strict_order: key(recorded) == key(replayed),
        conflict_order: epochs(recorded) == epochs(replayed),
        values: recorded.reads == replayed.reads,
        lock_order: recorded.locks == replayed.locks,
    }
}

/// Record `prog` under seed `rec_seed`, replay under `rep_seed`, compare.
pub fn run_case<S: Strategy>(
    s: &S,
    prog: &Program,
    rec_seed: u64,
    rep_seed: u64,
    substrate: Substrate,
) -> (Recording<S::Log>, Observation, Verdict) {
    let rec = record(s, prog, &mut RandomScheduler(Rng(rec_seed)));
    let obs = replay(
        s,
        prog,
        &rec,
        substrate,
        &mut RandomScheduler(Rng(rep_seed)),
    );
    let v = compare(&rec.obs, &obs);
    (rec, obs, v)
}

/// Aggregate of many simulated cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fidelity {
    /// Cases run.
    pub total: u64,
    /// Exact replays ([`Verdict::exact`]).
    pub exact: u64,
    /// Replays with the strict per-location order.
    pub strict: u64,
    /// Replays that deadlocked (did not complete).
    pub deadlocks: u64,
    /// Completed replays with a wrong value or conflict order.
    pub wrong: u64,
    /// Replays with a different lock order.
    pub lock_diff: u64,
    /// Sum of log sizes in bytes.
    pub log_bytes: u64,
    /// Sum of recorded events.
    pub events: u64,
}

/// Run `cases` random programs (program `i` from seed `seed + i`) and count the outcomes.
pub fn fidelity<S: Strategy>(
    s: &S,
    cfg: &GenConfig,
    substrate: Substrate,
    seed: u64,
    cases: u64,
) -> Fidelity {
    let mut f = Fidelity::default();
    for i in 0..cases {
        let mut rng = Rng(seed.wrapping_add(i).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let prog = generate(&mut rng, cfg);
        let (rec, _obs, v) = run_case(s, &prog, rng.next_u64(), rng.next_u64(), substrate);
        f.total += 1;
        f.exact += v.exact() as u64;
        f.strict += (v.completed && v.strict_order && v.values) as u64;
        f.deadlocks += (!v.completed) as u64;
        f.wrong += (v.completed && !(v.conflict_order && v.values)) as u64;
        f.lock_diff += (v.completed && !v.lock_order) as u64;
        f.log_bytes += rec.size_bytes(s.logs_thread_table()) as u64;
        f.events += rec.events.len() as u64;
    }
    f
}
