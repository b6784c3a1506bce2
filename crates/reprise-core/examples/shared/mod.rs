//! The search `smallest` and `plus_smallest` both run: small random programs (2-3 threads, 1-4
//! segments, two locations, one lock; 20 000 of each shape), each recorded and replayed once
//! on the simulator; the failing case of least size.

use reprise_core::sim::{
    generate, run_case, GenConfig, Observation, Program, Recording, Rng, Substrate, Verdict,
};
use reprise_core::Strategy;

/// One simulated case: the program, its scheduler seeds, what was recorded and replayed, and
/// the verdict.
pub struct Case<'a, L> {
    pub prog: &'a Program,
    // `smallest` prints no seeds.
    #[allow(dead_code)]
    pub rec_seed: u64,
    #[allow(dead_code)]
    pub rep_seed: u64,
    pub rec: &'a Recording<L>,
    pub obs: &'a Observation,
    pub v: &'a Verdict,
}

/// Of the cases of `s` on `sub` that `failed` says failed, the description (`describe`) of the
/// one of least `size` (the first found among equals).
pub fn smallest_failure<S: Strategy>(
    s: &S,
    sub: Substrate,
    failed: impl Fn(&Case<'_, S::Log>) -> bool,
    size: impl Fn(&Case<'_, S::Log>) -> usize,
    describe: impl Fn(&Case<'_, S::Log>) -> String,
) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for segs in 1..=4 {
        for threads in 2..=3 {
            let cfg = GenConfig {
                max_threads: threads,
                locs: 2,
                locks: 1,
                max_segments: segs,
                rmw_pct: 10,
                lock_pct: 20,
            };
            for i in 0..20_000u64 {
                let mut rng = Rng(i.wrapping_mul(0x9E37) ^ (segs * 1000 + threads));
                let prog = generate(&mut rng, &cfg);
                let (rec_seed, rep_seed) = (rng.next_u64(), rng.next_u64());
                let (rec, obs, v) = run_case(s, &prog, rec_seed, rep_seed, sub);
                let case = Case {
                    prog: &prog,
                    rec_seed,
                    rep_seed,
                    rec: &rec,
                    obs: &obs,
                    v: &v,
                };
                if !failed(&case) {
                    continue;
                }
                let n = size(&case);
                if best.as_ref().is_none_or(|(b, _)| n < *b) {
                    best = Some((n, describe(&case)));
                }
            }
        }
    }
    best.map(|(_, d)| d)
}
