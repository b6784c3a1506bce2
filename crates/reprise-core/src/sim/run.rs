//! Recording and replay of a [`Program`] on a small machine that enforces its semantics (locks,
//! joins) and computes every written value from the values read before.

use super::{mix, Access, Observation, POp, Program, Recording, Scheduler, Substrate};
use crate::event::{Event, Op, ThreadId};
use crate::strategy::{Recorder, Replayer, Strategy};
use crate::threads::{ThreadMatcher, ThreadTable};
use std::collections::HashMap;

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
