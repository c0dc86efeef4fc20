//! The measuring harness: contenders ("cases") run interleaved in rotated rounds, medians,
//! CPU seconds and minor faults from `getrusage`, and the checks of what a case produced.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::Res;
use crate::datagen::fingerprint;
use crate::report::Row;
use crate::workloads::Workload;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we hand it.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
        t(u.ru_utime) + t(u.ru_stime)
    }
}

pub fn minor_faults() -> u64 {
    // SAFETY: getrusage fills the struct we hand it.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u.ru_minflt as u64
    }
}

/// Reads every object's name, shape, dtype, offset and file from an open reader: what
/// "open + list" rows list, the same for every case of ours.
pub fn listing(r: &ztensor::Reader<'_>) -> u64 {
    let mut acc = 0u64;
    for o in r.objects() {
        acc = acc.wrapping_add(o.name().len() as u64);
        for &d in o.shape() {
            acc ^= d;
        }
        let c = &o.components()[0];
        acc = acc.wrapping_add(c.dtype() as u64 + c.offset() + u64::from(c.file()));
    }
    acc
}

/// Caller buffers, one per tensor (in the workload's order), touched once so that the
/// measurements copy into resident memory.
pub fn caller_buffers(w: &Workload) -> Vec<Vec<u8>> {
    w.tensors.iter().map(|t| vec![0x55u8; t.len]).collect()
}

fn check_buffers(w: &Workload, bufs: &[Vec<u8>], who: &str) -> Res<()> {
    for (i, b) in bufs.iter().enumerate() {
        if fingerprint(b) != w.prints[i] {
            return Err(format!(
                "{who} read wrong bytes for '{}' in {}",
                w.tensors[i].name, w.id
            )
            .into());
        }
    }
    Ok(())
}

fn scrub(bufs: &mut [Vec<u8>]) {
    for b in bufs {
        b.fill(0x55);
    }
}

/// A check that the caller buffers hold the workload's bytes; it then scrubs them, so that the
/// next case's check sees only what that case wrote.
pub fn filled_right<'a>(
    w: &'a Workload,
    bufs: &'a RefCell<Vec<Vec<u8>>>,
    who: &'static str,
) -> impl FnMut() -> Res<()> + 'a {
    move || {
        check_buffers(w, &bufs.borrow(), who)?;
        scrub(&mut bufs.borrow_mut());
        Ok(())
    }
}

type CaseFn<'a> = Box<dyn FnMut() -> Res<()> + 'a>;

/// One contender of a comparison.
pub struct Case<'a> {
    pub name: &'static str,
    run: CaseFn<'a>,
    /// Untimed, before every timed call (each run then times exactly one call).
    setup: Option<CaseFn<'a>>,
    /// Untimed, after the warm-up call: checks what the case produced.
    check: Option<CaseFn<'a>>,
}

pub fn case<'a>(name: &'static str, run: impl FnMut() -> Res<()> + 'a) -> Case<'a> {
    Case {
        name,
        run: Box::new(run),
        setup: None,
        check: None,
    }
}

impl<'a> Case<'a> {
    pub fn setup(mut self, f: impl FnMut() -> Res<()> + 'a) -> Case<'a> {
        self.setup = Some(Box::new(f));
        self
    }
    pub fn check(mut self, f: impl FnMut() -> Res<()> + 'a) -> Case<'a> {
        self.check = Some(Box::new(f));
        self
    }
}

/// A case's median seconds per call, and the CPUs it kept busy (CPU s per wall s).
#[derive(Clone, Copy)]
pub struct Timing {
    pub secs: f64,
    pub cpu: f64,
}

/// Runs every case once (warm-up, then its check), then `runs` rounds in which every case
/// runs once, in an order rotated each round, so that a change in the machine's load
/// falls on every contender alike. A call shorter than 20 ms is repeated within its turn
/// (unless the case has a setup). Returns the timings in the cases' order.
pub fn measure(runs: usize, mut cases: Vec<Case<'_>>) -> Res<Vec<Timing>> {
    for c in cases.iter_mut() {
        if let Some(s) = c.setup.as_mut() {
            s()?;
        }
        (c.run)().map_err(|e| format!("{}: {e}", c.name))?;
        if let Some(k) = c.check.as_mut() {
            k().map_err(|e| format!("{}: {e}", c.name))?;
        }
    }
    let k = cases.len();
    let mut samples = vec![Vec::with_capacity(runs); k];
    let mut cpu = vec![0.0f64; k];
    let mut wall = vec![0.0f64; k];
    for round in 0..runs {
        for j in 0..k {
            let i = (j + round) % k;
            let c = &mut cases[i];
            if let Some(s) = c.setup.as_mut() {
                s()?;
            }
            let c0 = cpu_seconds();
            let start = Instant::now();
            let mut calls = 0u32;
            loop {
                (c.run)()?;
                calls += 1;
                let el = start.elapsed();
                if c.setup.is_some() || el >= Duration::from_millis(20) {
                    samples[i].push(el.as_secs_f64() / f64::from(calls));
                    cpu[i] += cpu_seconds() - c0;
                    wall[i] += el.as_secs_f64();
                    break;
                }
            }
        }
    }
    Ok(samples
        .into_iter()
        .enumerate()
        .map(|(i, s)| Timing {
            secs: median(s),
            cpu: cpu[i] / wall[i],
        })
        .collect())
}

/// A row from measured cases: the first is ours, the last `limits` (0 or 1) the limit.
pub fn row_from(
    metric: &str,
    workload: &str,
    names: &[&'static str],
    t: &[Timing],
    has_limit: bool,
) -> Row {
    let mut row = Row::new(metric, workload, "s", t[0].secs).cpu(t[0].cpu);
    let peers_end = if has_limit { t.len() - 1 } else { t.len() };
    for i in 1..peers_end {
        row = row.peer(names[i], t[i].secs);
    }
    if has_limit {
        row = row.limit(names[t.len() - 1], t[t.len() - 1].secs);
    }
    row
}

/// For a target that needs both cores: what ours and the 1-thread limit got from the machine,
/// in CPUs and in CPU seconds per call.
pub fn parallel_note(ours: Timing, limit: Timing, cores: usize) -> String {
    let busy = if ours.cpu < 0.75 * cores as f64 {
        format!(
            "; MACHINE BUSY: ours had {:.2} of {cores} CPUs, so a parallel speed-up could not show",
            ours.cpu
        )
    } else {
        String::new()
    };
    format!(
        "CPU s per call: ours {:.3} ({:.2} CPUs), limit {:.3} ({:.2} CPUs){busy}",
        ours.secs * ours.cpu,
        ours.cpu,
        limit.secs * limit.cpu,
        limit.cpu
    )
}

pub fn names_of(cases: &[Case<'_>]) -> Vec<&'static str> {
    cases.iter().map(|c| c.name).collect()
}

/// A check that a case's output buffer holds `expect`.
pub fn same_bytes<'a>(
    dst: &'a RefCell<Vec<u8>>,
    expect: &'a [u8],
    who: &'static str,
) -> impl FnMut() -> Res<()> + 'a {
    move || {
        if dst.borrow()[..] != expect[..] {
            return Err(format!("{who} returned wrong bytes").into());
        }
        Ok(())
    }
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM, RssAnon, RssFile); 0 when unreadable.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
