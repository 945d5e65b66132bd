//! Family 10: synchronizability. A buffer written by some threads and read by others needs a
//! barrier between the writes and the reads; OpenCL has only work-group barriers, and a
//! barrier must be reached by every thread of its work group.

use super::{Gen, Out};
use crate::analysis::{Buffer, Reader, Writer};
use crate::expr::{Expr, Term};
use crate::space::{BarrierSite, Family, MapId};
use crate::Code;
use mapsat_ir::ast::AddressSpace;

/// What family 10 produces besides its constraints.
pub(super) struct Sync {
    /// Where barriers may be needed.
    pub barriers: Vec<BarrierSite>,
    /// True when the local sizes are tuning parameters: a barrier may lie in a `mapLcl` loop,
    /// or a device profile limits the work-group size.
    pub needs_local_sizes: bool,
}

/// The rules of family 10 for every buffer. The constraints on barriers inside loops come
/// after all the others.
pub(super) fn synchronizability(g: &Gen, out: &mut Out) -> Sync {
    let mut sync = Sync { barriers: Vec::new(), needs_local_sizes: g.options.profile.is_some() };
    let mut in_loops = Vec::new();
    let mut reread = Vec::new();
    for b in &g.a.buffers {
        let Some(site) = Site::of(g, b) else { continue };
        no_reads_across_groups(g, out, b, &site);
        if b.space() == AddressSpace::Global {
            reread.push((site.top, writers(g, b, &site)));
        }
        if let Some(c) = barrier_in_loops(g, b, &site) {
            in_loops.push(c);
            sync.needs_local_sizes = true;
        }
        let readers = site.readers.iter().map(|&r| MapId(r)).collect();
        sync.barriers.push(BarrierSite { writer: MapId(site.top), readers, space: b.space(), needed: site.needed });
    }
    no_redundant_writers(g, out, &reread);
    result_copied_by_every_thread(g, out);
    for (maps, text, e) in in_loops {
        out.push(Family::Sync, &maps, text, e);
    }
    sync
}

/// A result the kernel copies to its output after computing it (through a view that cannot be
/// written through, [`crate::analysis::copied_maps`]) is copied by every thread, each
/// reading what all the others wrote; and what it copies is written by every thread alike
/// where a map elsewhere launches more than one. So every map of the kernel runs in one thread
/// (sequential, fused or vectorized): code generation refuses the others (a grid-wide
/// synchronization, or a race on a buffer read again); the space offered
/// `padClamp(2, 0, map(f, x))` as `G0`.
fn result_copied_by_every_thread(g: &Gen, out: &mut Out) {
    let copied = g.as_vars(&g.a.copied);
    if copied.is_empty() {
        return;
    }
    let copied = g.names(&copied);
    for i in 0..g.len() {
        let one_thread = [Code::Seq, Code::Fused, Code::Vec].into_iter().map(|c| Expr::code_is(i, c)).collect();
        out.push(
            Family::Sync,
            &[i],
            format!(
                "map {}: the program's result, computed by {copied}, is copied out by every thread, so the kernel runs in one thread (S, F or V)",
                g.label(i)
            ),
            Expr::Or(one_thread),
        );
    }
}

/// A buffer whose readers may read elements other threads wrote.
struct Site {
    /// The variable of the outermost map writing the buffer.
    top: usize,
    /// Every variable writing or reading it, increasing.
    involved: Vec<usize>,
    /// The maps reading it (each once).
    readers: Vec<usize>,
    /// For each read dimension, a mismatch of writer and reader that crosses work groups.
    cross: Vec<Expr>,
    /// A barrier is needed: some read dimension's writer and reader do not match.
    needed: Expr,
}

impl Site {
    /// The site of buffer `b`, if it is written by a variable and read by maps or threads whose
    /// dimension's writer or reader is a variable.
    fn of(g: &Gen, b: &Buffer) -> Option<Site> {
        let top = g.var_of(b.top)?;
        let (mut involved, mut readers) = (vec![top], Vec::new());
        let (mut mismatch, mut cross) = (Vec::new(), Vec::new());
        for (k, r) in &b.reads {
            let w: Vec<usize> = match &b.writers[*k] {
                Writer::Thread => vec![],
                Writer::Maps(ws) => g.as_vars(ws),
            };
            let r = match r {
                Reader::Thread => None,
                Reader::Map(q) => g.var_of(*q),
            };
            if w.is_empty() && r.is_none() {
                continue;
            }
            involved.extend(w.iter().copied());
            if let Some(r) = r {
                involved.push(r);
                if !readers.contains(&r) {
                    readers.push(r);
                }
            }
            let matched = same_threads(&w, r);
            // Some writer or the reader spread over work groups or global threads.
            let wide =
                Expr::Or(w.iter().copied().chain(r).map(|i| Expr::negate(Expr::within_group(Term::Eff(i)))).collect());
            cross.push(Expr::And(vec![Expr::negate(matched.clone()), wide]));
            mismatch.push(Expr::negate(matched));
        }
        if mismatch.is_empty() {
            return None;
        }
        involved.sort_unstable();
        involved.dedup();
        Some(Site { top, involved, readers, cross, needed: Expr::Or(mismatch) })
    }
}

/// The threads that write each element of a buffer dimension (writers `w`) are the threads
/// that read it (reader `r`): both run within one thread, or one writer and the reader are the
/// same parallel map (code and dimension), neither fused. Joined dimensions (several writers),
/// and whole reads by one thread, match only when all run within one thread (conservative).
fn same_threads(w: &[usize], r: Option<usize>) -> Expr {
    let seq = |i: usize| Expr::within_thread(Term::Eff(i));
    match (w, r) {
        ([w], Some(r)) => Expr::Or(vec![
            Expr::And(vec![seq(*w), seq(r)]),
            Expr::And(vec![
                Expr::Eq(Term::Eff(*w), Term::Eff(r)),
                Expr::negate(seq(*w)),
                Expr::negate(Expr::code_is(*w, Code::Fused)),
                Expr::negate(Expr::code_is(r, Code::Fused)),
            ]),
        ]),
        (ws, r) => Expr::And(ws.iter().copied().chain(r).map(seq).collect()),
    }
}

/// Threads read elements that threads of other work groups wrote only when none of the maps
/// is spread over work groups. OpenCL has no barrier across work groups (and mapsat emits one
/// kernel): without this rule such a read would race with the write.
fn no_reads_across_groups(g: &Gen, out: &mut Out, b: &Buffer, site: &Site) {
    let space_name = match b.space() {
        AddressSpace::Global => "global",
        AddressSpace::Local => "local",
        AddressSpace::Private => "private",
    };
    let readers = if site.readers.is_empty() {
        "a sequential reader".to_string()
    } else {
        format!("map {}", g.names(&site.readers))
    };
    out.push(
        Family::Sync,
        &site.involved,
        format!(
            "the {space_name} buffer written by map {} is read by {readers}: threads must not read elements \
             written by threads of other work groups (cannot synchronize: OpenCL has no global barrier)",
            g.label(site.top)
        ),
        Expr::negate(Expr::Or(site.cross.clone())),
    );
}

/// The maps writing buffer `b`: the maps around its outermost writer, that writer, and the
/// writers of its elements, increasing.
fn writers(g: &Gen, b: &Buffer, site: &Site) -> Vec<usize> {
    let mut writers = g.context(b.top);
    writers.push(site.top);
    for w in &b.writers {
        if let Writer::Maps(ws) = w {
            writers.extend(g.as_vars(ws));
        }
    }
    writers.sort_unstable();
    writers.dedup();
    writers
}

/// The maps writing a global temporary use every thread dimension the kernel uses (of each of
/// `mapGlb`, `mapWrg`, `mapLcl`). A dimension they leave out runs them in every thread of it:
/// all those threads write the same elements of the shared buffer at once, then read it back,
/// a data race (of equal values) that OpenCL leaves undefined, and that pocl's work-group
/// vectorizer does turn into wrong results (issue #9's differential test: a sequential
/// pipeline stage before a `mapLcl` one read uninitialized elements). Rule 7, a preference,
/// says the same of every chain; for the writers of a buffer read again it is a correctness
/// rule. One constraint for all such buffers of the kernel (`reread`: each buffer's outermost
/// writer and its writers), so that its size grows with the maps and the writers, not with
/// their product (a pipeline of 160 maps has 159 such buffers).
fn no_redundant_writers(g: &Gen, out: &mut Out, reread: &[(usize, Vec<usize>)]) {
    if reread.is_empty() {
        return;
    }
    let all: Vec<usize> = (0..g.len()).collect();
    let mut parts = Vec::new();
    for d in 0..3u8 {
        for code in [Code::Glb(d), Code::Wrg(d), Code::Lcl(d)] {
            let each = reread.iter().map(|(_, ws)| Expr::any_code(ws, code)).collect();
            parts.push(Expr::implies(Expr::any_code(&all, code), Expr::And(each)));
        }
    }
    let tops: Vec<usize> = reread.iter().map(|(t, _)| *t).collect();
    out.push(
        Family::Sync,
        &all,
        format!(
            "the global buffers written by maps {} are read again in the kernel: the maps writing each use every \
             thread dimension the kernel uses (else every thread of a missing dimension writes the same \
             elements at once, a data race)",
            g.names(&tops)
        ),
        Expr::And(parts),
    );
}

/// A barrier after the buffer's writes lies inside the loops of the maps around it: every
/// thread of a work group must reach it equally often (a barrier some threads skip is undefined
/// behaviour, a hang in practice). So when a barrier is needed, no map around it is a `mapGlb`
/// (its threads' trip counts differ when the length is not a multiple of the launch), none is
/// fused into a parallel map (the flattened loop's trip counts differ likewise), and a
/// `mapLcl(d)` around it needs the local size `ls{d}` to divide its length.
fn barrier_in_loops(g: &Gen, b: &Buffer, site: &Site) -> Option<(Vec<usize>, String, Expr)> {
    let around = g.context(b.top);
    if around.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for &o in &around {
        parts.push(Expr::not_global(Term::Eff(o)));
        parts.push(Expr::negate(Expr::And(vec![
            Expr::code_is(o, Code::Fused),
            Expr::negate(Expr::within_thread(Term::Eff(o))),
        ])));
        for d in 0..3u8 {
            let divides = match g.info(o).extent {
                Some(n) => Expr::In(Term::Ls(d as usize), g.local_divisors(n)),
                None => Expr::Bool(false),
            };
            parts.push(Expr::implies(Expr::code_is(o, Code::Lcl(d)), divides));
        }
    }
    let mut maps = site.involved.clone();
    maps.extend(around.iter().copied());
    maps.sort_unstable();
    maps.dedup();
    let text = format!(
        "the barrier after map {} lies inside the loops of {}: every thread must run them the same \
         number of times (no mapGlb or fused parallel loop around it; a mapLcl(d) around it needs a \
         local size ls{{d}} that divides its length)",
        g.label(site.top),
        g.names(&around)
    );
    Some((maps, text, Expr::implies(site.needed.clone(), Expr::And(parts))))
}
