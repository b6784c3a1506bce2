//! reprise-core: the record/replay strategies of reprise as pure models, and a simulator that
//! checks them without a C compiler.
//!
//! It provides the event model ([`event`]: thread, operation, location, value), the [`Strategy`]
//! trait (a [`Recorder`] that observes events in execution order and builds a log, and a
//! [`Replayer`] that answers "may thread t perform its next event now?" and is told when the
//! callback returns), the seed strategies as faithful models — [`leap::Leap`] (seed 001),
//! [`aggreplay::AggrePlay`] (seed 000), [`tplay::Tplay`] (seed 003) — each with its log size in
//! bytes under its paper's encoding, the [`ownership::Ownership`] strategy (only changes of a
//! location's owner are logged, as happens-before edges, so private data costs nothing), the
//! thread abstraction shared by the seeds ([`threads`]), and [`sim`], which generates random
//! programs, records one interleaving and replays it under an adversarial scheduler, comparing
//! per-location orders and every value read.
//!
//! Improved variants, each adding exactly the relations its seed misses (so log sizes compare):
//! - [`aggreplay_plus::AggrePlayPlus`] (`aggreplay+`): AggrePlay's log unchanged; the replay
//!   bookkeeping of algorithm 2 (pop `W_x`, the last write, read counts, pop `L_m`) happens when the
//!   access is complete instead of in the callback, so write→write, write→read, read→write and the
//!   lock order hold between the accesses themselves on real threads (split substrate).
//! - [`tplay::TplayPlus`] (`tplay+`): TPLAY's recorder; a dry run over the recorded order moves
//!   each record to the event where it holds (the seed checks some before: the read-write record
//!   of a transaction at its first write, `dSet`/`aSet`/`bSet` records whose source comes later:
//!   those deadlock the seed's replays), adds an event-level edge for each write→write and
//!   write→read conflict that no check implies (`dSet` waits for a source transaction to *begin*
//!   and only at writes; read→write needs none once `rwSet` is checked where due), and publishes
//!   progress at the access.
//!
//! Both replay 100% of simulated programs on both substrates (`tests/plus_variants.rs`, which
//! also shows each added relation is needed). `examples/classify.rs` classifies the seeds'
//! failures by cause; `examples/plus_fidelity.rs` and `plus_smallest.rs` measure and minimise.
//!
//! Design decision: the replay side is split into `enter` / `may_proceed` / `proceed`, with the
//! access itself happening *after* `proceed` as a separate simulator step. The real runtime gates
//! inside an instrumentation callback that returns before the load or store executes, so a model in
//! which gate and access are one atomic step would certify protocols that fail on real threads.
//! `may_proceed` takes `&self` so a scheduler can ask about every thread without side effects.
//!
//! Not done yet: the `sync` (seed 002), `light` and `stride` strategies; serialising logs to the
//! trace format (sizes are computed, not written); condition variables, barriers and trylock as
//! events (the seeds fold them into locks).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod aggreplay;
pub mod aggreplay_plus;
pub mod aggreplay_rec;
pub mod binlog;
pub mod event;
pub mod leap;
pub mod ownership;
pub mod sim;
pub mod strategy;
pub mod threads;
pub mod tplay;

pub use event::{Event, EventId, Loc, LockId, Op, ThreadId};
pub use strategy::{LogSize, Recorder, Replayer, Strategy};
