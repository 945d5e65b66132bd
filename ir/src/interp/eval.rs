//! The evaluator: walks the node arena with an environment of de Bruijn-indexed values.

use super::kernel;
use super::lift;
use super::scalar;
use super::value::{tuple_at, Array, Collector, Fill, Func, Scalar, Tree, Value};
use super::EvalError;
use crate::ast::{BinOp, Node, NodeId, PadMode, Prim, Program, Span};
use crate::size::Size;
use crate::Sizes;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

/// Deepest nesting of evaluations (each needs a few kilobytes of stack).
pub(crate) const MAX_DEPTH: usize = 4000;
/// Deepest nesting of tuples and closures a reduce may build.
const MAX_NESTING: usize = 256;
/// Stack of the interpreter's threads.
pub(crate) const STACK_SIZE: usize = 256 << 20;
/// A map is spread over threads when its elements are estimated to take longer than this.
const PARALLEL_SECONDS: f64 = 0.002;

type R<T> = Result<T, EvalError>;

/// The interpreter's context. It is `Copy`: worker threads get their own.
#[derive(Clone, Copy)]
pub(crate) struct Interp<'a> {
    pub prog: &'a Program,
    pub sizes: &'a Sizes,
    pub params: &'a [Value],
    /// Threads a map may use.
    pub threads: usize,
    /// True inside a map already spread over threads.
    pub in_parallel: bool,
    depth: usize,
}

impl<'a> Interp<'a> {
    pub(crate) fn new(prog: &'a Program, sizes: &'a Sizes, params: &'a [Value], threads: usize) -> Self {
        Interp { prog, sizes, params, threads, in_parallel: false, depth: 0 }
    }

    pub(crate) fn err(&self, site: NodeId, message: impl Into<String>) -> EvalError {
        EvalError::Runtime { message: message.into(), span: self.prog.span(site) }
    }

    pub(crate) fn node(&self, id: NodeId) -> R<&'a Node> {
        self.prog.nodes.get(id.index()).ok_or_else(|| EvalError::Runtime {
            message: format!("malformed program: there is no node {}", id.0),
            span: Span::default(),
        })
    }

    fn size(&self, s: &Size, site: NodeId) -> R<i64> {
        s.eval(self.sizes).ok_or_else(|| {
            self.err(
                site,
                format!("cannot evaluate the size `{s}` (unknown size variable, division by zero or overflow)"),
            )
        })
    }

    /// Evaluates node `id`; `env` holds the values of the enclosing binders, innermost last.
    pub(crate) fn eval(&mut self, id: NodeId, env: &mut Vec<Value>) -> R<Value> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(id, "the program nests too deeply for the interpreter"));
        }
        self.depth += 1;
        let r = self.eval_node(id, env);
        self.depth -= 1;
        r
    }

    fn eval_node(&mut self, id: NodeId, env: &mut Vec<Value>) -> R<Value> {
        match self.node(id)? {
            Node::Param(i) => self
                .params
                .get(*i as usize)
                .cloned()
                .ok_or_else(|| self.err(id, format!("the program has no parameter {i}"))),
            Node::Var(k) => {
                let k = *k as usize;
                if k < env.len() {
                    Ok(env[env.len() - 1 - k].clone())
                } else {
                    Err(self.err(id, format!("unbound variable (de Bruijn index {k})")))
                }
            }
            Node::Lit(l) => Ok(Value::Scalar(Scalar::from_lit(*l))),
            Node::Prim(p) => {
                if p.arity() == 0 {
                    self.prim(p, Vec::new(), id)
                } else {
                    Ok(Value::Func(Arc::new(Func::Partial { prim: id, args: Vec::new() })))
                }
            }
            Node::Lam(..) => Ok(Value::Func(Arc::new(Func::Closure { lam: id, env: env.clone() }))),
            Node::Let(v, b) => {
                let x = self.eval(*v, env)?;
                let n = env.len();
                env.push(x);
                let r = self.eval(*b, env);
                env.truncate(n);
                r
            }
            Node::App(..) => {
                let (head, args) = self.prog.spine(id);
                if let Node::Prim(p) = self.node(head)? {
                    let arity = p.arity();
                    if arity > 0 && args.len() >= arity {
                        let r = self.saturated(p, &args[..arity], id, env)?;
                        if args.len() == arity {
                            return Ok(r);
                        }
                        let rest = self.eval_all(&args[arity..], env)?;
                        return self.apply(r, rest, id);
                    }
                }
                let f = self.eval(head, env)?;
                let vals = self.eval_all(&args, env)?;
                self.apply(f, vals, id)
            }
        }
    }

    fn eval_all(&mut self, args: &[NodeId], env: &mut Vec<Value>) -> R<Vec<Value>> {
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.eval(*a, env)?);
        }
        Ok(vals)
    }

    /// A primitive applied to exactly its arity of arguments. `&&` and `||` short-circuit on
    /// scalars, and `select` on a scalar condition evaluates only the value it selects, as C's
    /// `?:` (a division guarded by a select is not a division by zero).
    fn saturated(&mut self, p: &'a Prim, args: &[NodeId], site: NodeId, env: &mut Vec<Value>) -> R<Value> {
        if let Prim::Select = p {
            let c = self.eval(args[0], env)?;
            if let Value::Scalar(Scalar::Bool(c)) = c {
                return self.eval(args[if c { 1 } else { 2 }], env);
            }
            let (a, b) = (self.eval(args[1], env)?, self.eval(args[2], env)?);
            return scalar::select_value(&c, &a, &b).map_err(|m| self.err(site, m));
        }
        if let Prim::Bin(op @ (BinOp::And | BinOp::Or)) = p {
            let a = self.eval(args[0], env)?;
            if let Value::Scalar(Scalar::Bool(x)) = a {
                if x == (*op == BinOp::Or) {
                    return Ok(a);
                }
            }
            let b = self.eval(args[1], env)?;
            return scalar::bin_value(*op, &a, &b).map_err(|m| self.err(site, m));
        }
        let vals = self.eval_all(args, env)?;
        self.prim(p, vals, site)
    }

    /// Applies a function value to arguments.
    pub(crate) fn apply(&mut self, f: Value, args: Vec<Value>, site: NodeId) -> R<Value> {
        let mut f = f;
        let mut start = 0;
        while start < args.len() {
            let func = match &f {
                Value::Func(func) => func.clone(),
                v => return Err(self.err(site, format!("cannot apply {} as a function", v.describe()))),
            };
            match &*func {
                Func::Closure { lam, env } => {
                    let mut e = env.clone();
                    let mut node = *lam;
                    let first = start;
                    while start < args.len() {
                        match self.node(node)? {
                            Node::Lam(b, _) => {
                                e.push(args[start].clone());
                                start += 1;
                                node = *b;
                            }
                            _ => break,
                        }
                    }
                    if start == first {
                        return Err(self.err(site, "malformed closure"));
                    }
                    f = self.eval(node, &mut e)?;
                }
                Func::Partial { prim, args: given } => {
                    let Node::Prim(p) = self.node(*prim)? else {
                        return Err(self.err(site, "malformed partial application"));
                    };
                    let arity = p.arity();
                    let take = arity.saturating_sub(given.len()).min(args.len() - start);
                    let mut all = given.clone();
                    all.extend(args[start..start + take].iter().cloned());
                    start += take;
                    f = if all.len() < arity {
                        Value::Func(Arc::new(Func::Partial { prim: *prim, args: all }))
                    } else {
                        self.prim(p, all, site)?
                    };
                }
            }
        }
        Ok(f)
    }

    /// A primitive applied to `p.arity()` arguments.
    fn prim(&mut self, p: &'a Prim, args: Vec<Value>, site: NodeId) -> R<Value> {
        let span = self.prog.span(site);
        let err = |message: String| EvalError::Runtime { message, span };
        let arr = |i: usize, what: &str| args[i].array(what).map_err(err);
        let array = |a: Array| -> R<Value> { Ok(Value::Array(Arc::new(a))) };
        match p {
            Prim::Map { .. } => self.map(&args[0], &args[1], site),
            Prim::Reduce { .. } => self.reduce(&args[0], &args[1], &args[2], site),
            Prim::Zip(_) => {
                let comps =
                    args.iter().map(|a| a.array("zip").map(|a| &**a)).collect::<Result<Vec<_>, _>>().map_err(err)?;
                array(tuple_at(1, &comps).map_err(err)?)
            }
            Prim::Split(m) => {
                let m = self.size(m, site)?;
                array(arr(0, "split")?.split_at(0, m).map_err(err)?)
            }
            Prim::Join => array(arr(0, "join")?.join_at(0).map_err(err)?),
            Prim::Transpose => array(arr(0, "transpose")?.transpose_at(0).map_err(err)?),
            Prim::Slide(size, step) => {
                let (size, step) = (self.size(size, site)?, self.size(step, site)?);
                array(arr(0, "slide")?.slide_at(0, size, step).map_err(err)?)
            }
            Prim::Pad(l, r, mode) => {
                let (l, r) = (self.size(l, site)?, self.size(r, site)?);
                let fill = match mode {
                    PadMode::Constant(lit) => Fill::Const(Scalar::from_lit(*lit)),
                    PadMode::Clamp => Fill::Clamp,
                };
                array(arr(0, "pad")?.pad_at(0, l, r, fill).map_err(err)?)
            }
            Prim::At(i) => {
                let i = self.size(i, site)?;
                let a = arr(0, "at")?;
                let i = usize::try_from(i).map_err(|_| err(format!("index {i} is negative")))?;
                a.index(i).map_err(err)
            }
            Prim::Get(i) => match &args[0] {
                Value::Tuple(t) => t
                    .get(*i as usize)
                    .cloned()
                    .ok_or_else(|| err(format!("component {i} of a {}-tuple does not exist", t.len()))),
                v => Err(err(format!("get({i}) expects a tuple, found {}", v.describe()))),
            },
            Prim::Tuple(_) => Ok(Value::Tuple(args.into())),
            Prim::To(_) => Ok(args[0].clone()),
            Prim::AsVector(w) => array(arr(0, "asVector")?.as_vector_at(0, w.lanes).map_err(err)?),
            Prim::AsScalar => array(arr(0, "asScalar")?.as_scalar_at(0).map_err(err)?),
            Prim::Bin(op) => scalar::bin_value(*op, &args[0], &args[1]).map_err(err),
            Prim::Un(op) => scalar::un_value(*op, &args[0]).map_err(err),
            Prim::Select => scalar::select_value(&args[0], &args[1], &args[2]).map_err(err),
            Prim::Cast(k) => scalar::cast_value(*k, &args[0]).map_err(err),
            Prim::VectorFromScalar(w) => scalar::vector_from_scalar(w.lanes, &args[0]).map_err(err),
        }
    }

    fn map(&mut self, f: &Value, xs: &Value, site: NodeId) -> R<Value> {
        let arr = xs.array("map").map_err(|m| self.err(site, m))?;
        let n = arr.len();
        if n == 0 {
            // The element shape is unknown: an empty array of nothing.
            return Ok(Value::Array(Arc::new(Array { dims: vec![0], tree: Tree::Tuple(Vec::new()) })));
        }
        // On an error, the general path below finds it again and points at its node.
        if let Ok(Some(v)) = kernel::try_map(self, f, arr) {
            return Ok(v);
        }
        if let Some(v) = lift::try_map(self, f, arr) {
            return Ok(v);
        }
        let mut caller = Caller::new(self, f);
        let timer = (self.threads > 1 && !self.in_parallel && n > 2).then(Instant::now);
        let x0 = arr.index(0).map_err(|m| self.err(site, m))?;
        let r0 = caller.call1(self, x0, site)?;
        let mut col = Collector::new(&r0, n).map_err(|m| self.err(site, m))?;
        col.push(&r0).map_err(|m| self.err(site, m))?;
        drop(r0);
        if let Some(t) = timer {
            if t.elapsed().as_secs_f64() * (n - 1) as f64 > PARALLEL_SECONDS {
                return self.par_map(f, arr, col, site);
            }
        }
        for i in 1..n {
            let x = arr.index(i).map_err(|m| self.err(site, m))?;
            let r = caller.call1(self, x, site)?;
            col.push(&r).map_err(|m| self.err(site, m))?;
        }
        Ok(col.finish())
    }

    /// Elements `1..n` of a map over worker threads (this thread takes the first chunk).
    fn par_map(&mut self, f: &Value, arr: &Array, mut col: Collector, site: NodeId) -> R<Value> {
        let n = arr.len();
        let t = self.threads.min(n - 1).max(1);
        let chunk = (n - 1).div_ceil(t);
        let ranges: Vec<Range<usize>> =
            (0..t).map(|c| (1 + c * chunk).min(n)..(1 + (c + 1) * chunk).min(n)).filter(|r| !r.is_empty()).collect();
        let mut forked = *self;
        forked.in_parallel = true;
        let worker = |mut it: Interp<'a>, range: Range<usize>| -> R<Option<Collector>> {
            let mut caller = Caller::new(&it, f);
            let mut out: Option<Collector> = None;
            let len = range.len();
            for i in range {
                let x = arr.index(i).map_err(|m| it.err(site, m))?;
                let r = caller.call1(&mut it, x, site)?;
                if out.is_none() {
                    out = Some(Collector::new(&r, len).map_err(|m| it.err(site, m))?);
                }
                if let Some(c) = &mut out {
                    c.push(&r).map_err(|m| it.err(site, m))?;
                }
            }
            Ok(out)
        };
        let worker = &worker;
        let results: Vec<R<Option<Collector>>> = std::thread::scope(|s| {
            let handles: Vec<_> = ranges[1..]
                .iter()
                .map(|r| {
                    let r = r.clone();
                    std::thread::Builder::new().stack_size(STACK_SIZE).spawn_scoped(s, move || worker(forked, r))
                })
                .collect();
            let mut out = vec![worker(forked, ranges[0].clone())];
            for (h, r) in handles.into_iter().zip(&ranges[1..]) {
                out.push(match h {
                    Ok(h) => {
                        h.join().unwrap_or_else(|_| Err(EvalError::Internal("an interpreter thread panicked".into())))
                    }
                    Err(_) => worker(forked, r.clone()),
                });
            }
            out
        });
        for r in results {
            if let Some(c) = r? {
                col.append(c).map_err(|m| self.err(site, m))?;
            }
        }
        Ok(col.finish())
    }

    fn reduce(&mut self, f: &Value, init: &Value, xs: &Value, site: NodeId) -> R<Value> {
        let arr = xs.array("reduce").map_err(|m| self.err(site, m))?;
        if let Ok(Some(v)) = kernel::try_reduce(self, f, init, arr) {
            return Ok(v);
        }
        let mut caller = Caller::new(self, f);
        let mut acc = init.clone();
        for i in 0..arr.len() {
            let x = arr.index(i).map_err(|m| self.err(site, m))?;
            acc = caller.call2(self, acc, x, site)?;
            if acc.nests_deeper_than(MAX_NESTING) {
                return Err(self.err(site, "the accumulator of reduce nests tuples or functions too deeply"));
            }
        }
        Ok(acc)
    }
}

/// A function called many times (by map and reduce): a lambda reuses one environment.
enum Caller {
    Lam { body: NodeId, inner: Option<NodeId>, env: Vec<Value>, base: usize },
    Other(Value),
}

impl Caller {
    fn new(it: &Interp<'_>, f: &Value) -> Caller {
        if let Value::Func(func) = f {
            if let Func::Closure { lam, env } = &**func {
                if let Some(Node::Lam(b, _)) = it.prog.nodes.get(lam.index()) {
                    let inner = match it.prog.nodes.get(b.index()) {
                        Some(Node::Lam(b2, _)) => Some(*b2),
                        _ => None,
                    };
                    let mut e = Vec::with_capacity(env.len() + 4);
                    e.extend(env.iter().cloned());
                    return Caller::Lam { body: *b, inner, base: e.len(), env: e };
                }
            }
        }
        Caller::Other(f.clone())
    }

    fn call1(&mut self, it: &mut Interp<'_>, x: Value, site: NodeId) -> R<Value> {
        match self {
            Caller::Lam { body, env, base, .. } => {
                env.truncate(*base);
                env.push(x);
                it.eval(*body, env)
            }
            Caller::Other(f) => it.apply(f.clone(), vec![x], site),
        }
    }

    fn call2(&mut self, it: &mut Interp<'_>, a: Value, b: Value, site: NodeId) -> R<Value> {
        match self {
            Caller::Lam { inner: Some(body), env, base, .. } => {
                env.truncate(*base);
                env.push(a);
                env.push(b);
                it.eval(*body, env)
            }
            Caller::Lam { .. } => {
                let g = self.call1(it, a, site)?;
                it.apply(g, vec![b], site)
            }
            Caller::Other(f) => it.apply(f.clone(), vec![a, b], site),
        }
    }
}
