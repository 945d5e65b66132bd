//! The type checker: infers the type of every node, sizes included, and rejects ill-typed
//! programs with a message pointing at the source.
//!
//! Functions are not values in this IR: a function (a lambda, a partially applied primitive)
//! appears as the argument of a primitive that applies it (`map`, `reduce`), or applied
//! directly. The checker therefore types a function when it is applied, from the types of its
//! arguments, and records the resulting function type on the node.

use crate::ast::{AddressSpace, BinOp, Lit, Node, NodeId, PadMode, Prim, Program, Span, UnOp};
use crate::size::{Ranges, Size};
use crate::types::{ScalarKind, Type};
use std::collections::HashMap;

/// A type error, with the span it points at.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TypeError {
    /// Where.
    pub span: Span,
    /// What is wrong.
    pub message: String,
    /// Extra help.
    pub notes: Vec<String>,
}

impl TypeError {
    fn new(span: Span, message: impl Into<String>) -> Self {
        TypeError { span, message: message.into(), notes: Vec::new() }
    }

    fn note(mut self, note: impl Into<String>) -> Self {
        let note = note.into();
        if !note.is_empty() {
            self.notes.push(note);
        }
        self
    }
}

type TResult<T> = Result<T, TypeError>;

/// The result of checking: the type of every node, and the program's result type.
#[derive(Clone, Debug)]
pub struct TypeInfo {
    /// Type of each node, indexed by `NodeId`; `None` for nodes not reachable from the root.
    pub types: Vec<Option<Type>>,
    /// The type of the program's body.
    pub result: Type,
}

impl TypeInfo {
    /// The type of a node.
    pub fn of(&self, id: NodeId) -> Option<&Type> {
        self.types.get(id.index()).and_then(Option::as_ref)
    }
}

/// Checks a program with symbolic sizes. A malformed arena ([`Program::validate`]) is an error
/// too, never a panic.
pub fn check(p: &Program) -> TResult<TypeInfo> {
    validate(p)?;
    Checker::new(p, HashMap::new()).run()
}

/// Checks a program with some size variables replaced by concrete values: what `eval` and code
/// generation use, so that, e.g., a `split` that does not divide a concrete length is caught.
pub fn check_with_sizes(p: &Program, sizes: &crate::Sizes) -> TResult<TypeInfo> {
    validate(p)?;
    for s in &p.sizes {
        if let Some(v) = sizes.get(&s.name) {
            // 2^63 - 1 is what an overflowed size saturates to: no size of its own.
            if v == i64::MAX {
                let message = format!("size `{}` = {v} is too large (sizes are at most 2^63 - 2)", s.name);
                return Err(TypeError::new(Span::default(), message));
            }
            if v < s.min || s.max.is_some_and(|m| v > m) {
                let range = match s.max {
                    Some(m) => format!("{}..{m}", s.min),
                    None => format!("at least {}", s.min),
                };
                return Err(TypeError::new(
                    Span::default(),
                    format!("size `{}` = {v} is outside its range ({range})", s.name),
                ));
            }
            // A range may reach 0 or below, but values (and kernels) need positive sizes.
            if v < 1 {
                return Err(TypeError::new(
                    Span::default(),
                    format!("size `{}` = {v}: the interpreter and kernels need every size positive", s.name),
                ));
            }
        }
    }
    let p = &*crate::widths::specialize(p, sizes).map_err(|m| TypeError::new(Span::default(), m))?;
    let subst = sizes.iter().map(|(k, v)| (k.to_string(), Size::constant(v))).collect();
    let info = Checker::new(p, subst).run()?;
    check_bounds(p, &info, sizes)?;
    Ok(info)
}

/// Refuses a value that holds more than [`crate::bounds::MAX_BYTES`] bytes at these sizes
/// (parameters first, so that the message names the sizes of a declared type).
fn check_bounds(p: &Program, info: &TypeInfo, sizes: &crate::Sizes) -> TResult<()> {
    let at = |vars: Vec<String>| {
        let named: Vec<String> = vars.iter().filter_map(|v| sizes.get(v).map(|x| format!("{v}={x}"))).collect();
        if named.is_empty() && sizes.is_empty() {
            String::new()
        } else if named.is_empty() {
            format!(" at {sizes}")
        } else {
            format!(" at {}", named.join(", "))
        }
    };
    let subst = sizes.iter().map(|(k, v)| (k.to_string(), Size::constant(v))).collect();
    for q in &p.params {
        if crate::bounds::footprint(&q.ty.substitute(&subst)).is_err() {
            return Err(TypeError::new(
                Span::default(),
                format!(
                    "parameter `{}` of type {} is too large{}: it holds more than 2^62 bytes",
                    q.name,
                    q.ty,
                    at(q.ty.size_vars())
                ),
            ));
        }
    }
    for (i, t) in info.types.iter().enumerate() {
        let Some(t) = t else { continue };
        if crate::bounds::footprint(t).is_err() {
            let id = NodeId(i as u32);
            return Err(TypeError::new(
                p.span(id),
                format!("this value of type {t} is too large{}: it holds more than 2^62 bytes", at(Vec::new())),
            ));
        }
    }
    Ok(())
}

/// True when a length in the data type `t` is `bad` ([`Size::divides_by_zero`],
/// [`Size::overflows`]).
fn any_size(t: &Type, bad: fn(&Size) -> bool) -> bool {
    match t {
        Type::Array(e, n) => bad(n) || any_size(e, bad),
        Type::Tuple(ts) => ts.iter().any(|t| any_size(t, bad)),
        // A function's sizes are those of the values it is applied to, found there.
        Type::Fun(..) | Type::Scalar(_) | Type::Vector(..) => false,
    }
}

/// [`Program::validate`] as a type error, at the offending node's span when it has one.
fn validate(p: &Program) -> TResult<()> {
    p.validate().map_err(|e| {
        let span = e.node().map(|n| p.span(n)).unwrap_or_default();
        TypeError::new(span, format!("malformed program: {e}"))
    })
}

enum Arg {
    Node(NodeId),
    Ty(Type, Span),
}

struct Checker<'a> {
    p: &'a Program,
    subst: HashMap<String, Size>,
    ranges: Ranges,
    env: Vec<Type>,
    types: Vec<Option<Type>>,
    /// Divisions known to be exact: `(n, m)` when the program splits a length `n` by `m`.
    exact: Vec<(Size, Size)>,
}

fn describe(t: &Type) -> String {
    match t {
        Type::Fun(..) => format!("a function {t}"),
        _ => t.to_string(),
    }
}

fn fun_type(args: &[Type], res: Type) -> Type {
    args.iter().rev().fold(res, |acc, a| Type::fun(a.clone(), acc))
}

impl<'a> Checker<'a> {
    fn new(p: &'a Program, subst: HashMap<String, Size>) -> Self {
        let mut ranges = Ranges::default();
        for s in &p.sizes {
            ranges.set(&s.name, s.min, s.max);
        }
        Checker { p, subst, ranges, env: Vec::new(), types: vec![None; p.nodes.len()], exact: Vec::new() }
    }

    fn run(mut self) -> TResult<TypeInfo> {
        if self.p.root.index() >= self.p.nodes.len() {
            return Err(TypeError::new(Span::default(), "the program has no body"));
        }
        for q in &self.p.params {
            let t = self.ty(&q.ty);
            self.split_shaped(&t);
        }
        let result = self.infer(self.p.root)?;
        if let Some(ret) = &self.p.ret {
            let ret = self.ty(ret);
            if !self.same(&ret, &result) {
                return Err(TypeError::new(
                    self.p.span(self.p.root),
                    format!("the body has type {result}, but the declared result type is {ret}"),
                ));
            }
        }
        // At concrete sizes an overflowed length is refused by `check_bounds`, which names them.
        let overflow = self.subst.is_empty().then_some(("overflows 64 bits", Size::overflows as fn(&Size) -> bool));
        let zero = ("divides by zero", Size::divides_by_zero as fn(&Size) -> bool);
        for (what, bad) in std::iter::once(zero).chain(overflow) {
            if let Some(i) = self.types.iter().position(|t| t.as_ref().is_some_and(|t| any_size(t, bad))) {
                let t = self.types[i].as_ref().expect("found");
                return Err(TypeError::new(
                    self.p.span(NodeId(i as u32)),
                    format!("a size of this value's type {t} {what}"),
                ));
            }
        }
        Ok(TypeInfo { types: self.types, result })
    }

    fn sz(&self, s: &Size) -> Size {
        if self.subst.is_empty() {
            s.clone()
        } else {
            s.substitute(&self.subst)
        }
    }

    /// A primitive's static size argument at the checker's sizes; one that divides by zero
    /// has no value.
    fn static_size(&self, s: &Size, span: Span) -> TResult<Size> {
        let v = self.sz(s);
        match v.divides_by_zero() {
            true => Err(TypeError::new(span, format!("the size {s} divides by zero"))),
            false => Ok(v),
        }
    }

    fn ty(&self, t: &Type) -> Type {
        if self.subst.is_empty() {
            t.clone()
        } else {
            t.substitute(&self.subst)
        }
    }

    fn same(&self, a: &Type, b: &Type) -> bool {
        match (a, b) {
            (Type::Array(ea, na), Type::Array(eb, nb)) => self.same_size(na, nb) && self.same(ea, eb),
            (Type::Tuple(xs), Type::Tuple(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| self.same(x, y))
            }
            (Type::Fun(a1, r1), Type::Fun(a2, r2)) => self.same(a1, a2) && self.same(r1, r2),
            _ => a == b,
        }
    }

    /// Records the division of each array of `t` shaped as `split(m, ..)` makes it,
    /// `[[T]m](n/m)`, as exact, as the split's was: a kernel's parameter holding an earlier
    /// kernel's result stored tiled (`join` of it is `n` long). Symbolically assumed, like
    /// the split's; the sizes' values decide it (`check_with_sizes`: `m * (n/m)` is `n` there
    /// or the lengths differ).
    fn split_shaped(&mut self, t: &Type) {
        match t {
            Type::Array(e, q) => {
                if let Some((_, m)) = e.as_array() {
                    for (n, d) in q.divisions() {
                        if d == *m && *q == n.div_in(&d, &self.ranges) {
                            self.exact.push((n, d));
                        }
                    }
                }
                self.split_shaped(e);
            }
            Type::Tuple(ts) => ts.iter().for_each(|t| self.split_shaped(t)),
            _ => {}
        }
    }

    /// True when two sizes are provably equal.
    fn same_size(&self, a: &Size, b: &Size) -> bool {
        let d = a.cancel_exact(&self.exact).sub(&b.cancel_exact(&self.exact));
        let zero = Size::constant(0);
        let is_zero = |d: &Size| {
            *d == zero || (d.minimum_in(&zero, &self.ranges) == zero && d.maximum_in(&zero, &self.ranges) == zero)
        };
        // `(N - 1)/2 + 1` is `(N + 1)/2`: the two compared with their divisions' constants reduced.
        is_zero(&d) || is_zero(&d.with_offsets_reduced())
    }

    /// `n / m` for a length `n` that `m` divides (a split, a vector width), recorded as exact,
    /// and so are the divisions by `m` its simplified form brings: `(N + 2)/2` reads `N/2 + 1`,
    /// whose `N/2` is exact too, so that a join gives `N + 2` back (not those `n` has itself:
    /// `2*(K/2) + 2` is even for an odd `K`).
    fn exact_quotient(&mut self, n: &Size, m: &Size) -> Size {
        self.exact.push((n.clone(), m.clone()));
        let q = n.div_in(m, &self.ranges);
        self.exact.extend(Size::tile_divisions(&q, n, m));
        q
    }

    /// Simplifies the sizes of a type with the exact divisions known so far.
    fn norm(&self, t: Type) -> Type {
        match t {
            Type::Array(e, n) => Type::array(self.norm(*e), n.cancel_exact(&self.exact)),
            Type::Tuple(ts) => Type::Tuple(ts.into_iter().map(|t| self.norm(t)).collect()),
            Type::Fun(a, r) => Type::fun(self.norm(*a), self.norm(*r)),
            t => t,
        }
    }

    fn record(&mut self, id: NodeId, t: &Type) {
        self.types[id.index()] = Some(t.clone());
    }

    /// The type of a data expression.
    fn infer(&mut self, id: NodeId) -> TResult<Type> {
        self.infer_app(id, Vec::new())
    }

    /// The type of `id` applied to `extra` further arguments.
    fn infer_app(&mut self, id: NodeId, extra: Vec<(Type, Span)>) -> TResult<Type> {
        // Walk the spine: the App nodes from the root down, then the head.
        let mut apps = Vec::new();
        let mut arg_nodes = Vec::new();
        let mut head = id;
        while let Node::App(f, a) = self.p.node(head) {
            apps.push(head);
            arg_nodes.push(*a);
            head = *f;
        }
        arg_nodes.reverse();
        apps.reverse(); // apps[j] has j+1 arguments applied
        let mut args: Vec<Arg> = arg_nodes.into_iter().map(Arg::Node).collect();
        args.extend(extra.into_iter().map(|(t, s)| Arg::Ty(t, s)));
        let span = self.p.span(id);

        let (arg_tys, res) = match self.p.node(head).clone() {
            Node::Prim(prim) => {
                let (tys, res) = self.prim(&prim, head, &args, span)?;
                (tys, self.norm(res))
            }
            Node::Param(i) => {
                let t = match self.p.params.get(i as usize) {
                    Some(p) => self.ty(&p.ty),
                    None => return Err(TypeError::new(span, format!("no parameter number {i}"))),
                };
                self.no_args(head, &t, &args)?;
                (vec![], t)
            }
            Node::Var(k) => {
                let k = k as usize;
                if k >= self.env.len() {
                    return Err(TypeError::new(span, format!("unbound variable (de Bruijn index {k})")));
                }
                let t = self.env[self.env.len() - 1 - k].clone();
                self.no_args(head, &t, &args)?;
                (vec![], t)
            }
            Node::Lit(l) => {
                let t = Type::Scalar(l.kind());
                self.no_args(head, &t, &args)?;
                (vec![], t)
            }
            Node::Lam(..) | Node::Let(..) => {
                // Arguments of a lambda are data, typed here in the outer scope.
                let mut tys = Vec::new();
                for a in &args {
                    tys.push(self.data(a)?);
                }
                let res = self.apply_binder(head, &tys, span)?;
                (tys, res)
            }
            Node::App(..) => unreachable!("the spine walk stops at a non-App head"),
        };
        self.record(head, &fun_type(&arg_tys, res.clone()));
        for (j, app) in apps.iter().enumerate() {
            let t = fun_type(arg_tys.get(j + 1..).unwrap_or(&[]), res.clone());
            self.record(*app, &t);
        }
        Ok(res)
    }

    fn no_args(&self, head: NodeId, t: &Type, args: &[Arg]) -> TResult<()> {
        if args.is_empty() {
            return Ok(());
        }
        let what = match self.p.node(head) {
            Node::Param(i) => format!("parameter `{}`", self.p.params[*i as usize].name),
            Node::Var(_) => "this variable".to_string(),
            _ => "this literal".to_string(),
        };
        Err(TypeError::new(self.arg_span(&args[0]), format!("{what} has type {t} and cannot be applied to arguments")))
    }

    /// A lambda or `let` in head position, applied to arguments of the given types.
    fn apply_binder(&mut self, id: NodeId, args: &[Type], span: Span) -> TResult<Type> {
        match self.p.node(id).clone() {
            Node::Lam(body, ann) => {
                let Some((first, rest)) = args.split_first() else {
                    return Err(TypeError::new(
                        self.p.span(id),
                        "a function cannot be used as a value: lambdas are given to map or reduce, or applied directly",
                    ));
                };
                if let Some(ann) = ann {
                    let ann = self.ty(&ann);
                    if !self.same(&ann, first) {
                        return Err(TypeError::new(
                            self.p.span(id),
                            format!("this function expects {ann} but is applied to {}", describe(first)),
                        ));
                    }
                }
                self.env.push(first.clone());
                let r = if matches!(self.p.node(body), Node::Lam(..) | Node::Let(..)) && !rest.is_empty() {
                    self.apply_binder(body, rest, span)
                } else {
                    let extra = rest.iter().map(|t| (t.clone(), span)).collect();
                    self.infer_app(body, extra)
                };
                self.env.pop();
                let r = r?;
                self.record(body, &fun_type(rest, r.clone()));
                Ok(r)
            }
            Node::Let(v, b) => {
                let tv = self.infer(v)?;
                if matches!(tv, Type::Fun(..)) {
                    return Err(TypeError::new(self.p.span(v), "`let` binds values, not functions"));
                }
                self.env.push(tv);
                let extra = args.iter().map(|t| (t.clone(), span)).collect();
                let r = self.infer_app(b, extra);
                self.env.pop();
                r
            }
            _ => unreachable!("called on binders only"),
        }
    }

    fn arg_span(&self, a: &Arg) -> Span {
        match a {
            Arg::Node(n) => self.p.span(*n),
            Arg::Ty(_, s) => *s,
        }
    }

    /// The type of a data argument.
    fn data(&mut self, a: &Arg) -> TResult<Type> {
        match a {
            Arg::Node(n) => self.infer(*n),
            Arg::Ty(t, _) => Ok(t.clone()),
        }
    }

    /// The result type of a function argument applied to arguments of the given types.
    fn call(&mut self, f: &Arg, args: &[Type]) -> TResult<Type> {
        match f {
            Arg::Node(n) => {
                let span = self.p.span(*n);
                let extra = args.iter().map(|t| (t.clone(), span)).collect();
                self.infer_app(*n, extra)
            }
            Arg::Ty(t, s) => Err(TypeError::new(*s, format!("expected a function, found a value of type {t}"))),
        }
    }

    fn array<'t>(&self, t: &'t Type, a: &Arg, what: &str) -> TResult<(&'t Type, Size)> {
        match t {
            Type::Array(e, n) => Ok((e, n.clone())),
            _ => Err(TypeError::new(self.arg_span(a), format!("{what} expects an array, found {}", describe(t)))),
        }
    }

    /// Rejects `m` as a divisor of `n` when it provably does not divide it.
    fn divides(&self, n: &Size, m: &Size, span: Span, what: &str) -> TResult<()> {
        if m.overflows() {
            return Err(TypeError::new(span, format!("{what} overflows 64 bits at these sizes")));
        }
        if m.as_const().is_some_and(|c| c <= 0) {
            return Err(TypeError::new(span, format!("{what} must be positive, not {m}")));
        }
        let r = n.rem_in(m, &self.ranges);
        if r.as_const().is_some_and(|c| c != 0) {
            return Err(TypeError::new(span, format!("{what} {m} does not divide the length {n} of its input")));
        }
        Ok(())
    }

    /// A slide whose step is a size expression, not a constant, tiles its input (the tiles of
    /// overlapped tiling, `slide(u + n - 1, u, xs)`): like a split's factor, the step must divide
    /// `span` (the input's length less the window size), decided at concrete sizes. Its window
    /// count `count` then has an exact division, recorded so that `u * (count)` is the length the
    /// tiles cover. A slide with a constant step may leave a rest: no fact, no condition.
    fn tile_slide(&mut self, raw_step: &Size, span: &Size, step: &Size, count: &Size, at: Span) -> TResult<()> {
        if raw_step.as_const().is_some() {
            return Ok(());
        }
        if span.rem_in(step, &self.ranges).as_const().is_some_and(|c| c != 0) {
            return Err(TypeError::new(
                at,
                format!("slide step {step} does not tile the input: it must divide the input's length less the window size, {span}"),
            ));
        }
        self.exact.extend(Size::tile_divisions(count, span, step));
        Ok(())
    }

    /// Typing rules of the primitives. Returns the types of all arguments and the result.
    fn prim(&mut self, prim: &Prim, head: NodeId, args: &[Arg], span: Span) -> TResult<(Vec<Type>, Type)> {
        let name = prim.name();
        let note = crate::syntax::signature_note(name);
        let arity = prim.arity();
        if args.len() > arity {
            return Err(TypeError::new(
                span,
                format!("`{name}` takes {arity} argument(s) but is given {}", args.len()),
            )
            .note(note));
        }
        if args.len() < arity {
            let missing = arity - args.len();
            return Err(TypeError::new(
                span,
                format!(
                    "`{name}` is missing {missing} argument(s): a partially applied primitive is a function, which cannot be used as a value here"
                ),
            )
            .note(note));
        }
        let pspan = self.p.span(head);
        let e = |msg: String| TypeError::new(span, msg).note(crate::syntax::signature_note(name));
        match prim {
            Prim::Map { .. } => {
                let txs = self.data(&args[1])?;
                let (elem, n) = self.array(&txs, &args[1], name)?;
                let elem = elem.clone();
                let u = self.call(&args[0], std::slice::from_ref(&elem))?;
                if matches!(u, Type::Fun(..)) {
                    return Err(e(format!("the function given to `{name}` returns a function")));
                }
                Ok((vec![Type::fun(elem.clone(), u.clone()), txs.clone()], Type::array(u, n)))
            }
            Prim::Reduce { .. } => {
                let tinit = self.data(&args[1])?;
                let txs = self.data(&args[2])?;
                let (elem, _) = self.array(&txs, &args[2], name)?;
                let elem = elem.clone();
                let r = self.call(&args[0], &[tinit.clone(), elem.clone()])?;
                if !self.same(&r, &tinit) {
                    return Err(e(format!(
                        "the function given to `{name}` returns {r}, but the accumulator has type {tinit}"
                    )));
                }
                Ok((vec![fun_type(&[tinit.clone(), elem], r), tinit.clone(), txs.clone()], tinit))
            }
            Prim::Zip(_) => {
                let mut tys = Vec::new();
                let mut elems = Vec::new();
                let mut len: Option<Size> = None;
                for (i, a) in args.iter().enumerate() {
                    let t = self.data(a)?;
                    let (el, n) = self.array(&t, a, "zip")?;
                    if let Some(l) = &len {
                        if !self.same_size(l, &n) {
                            return Err(TypeError::new(
                                span,
                                format!("zip of arrays of different lengths: argument 1 has length {l}, argument {} has length {n}", i + 1),
                            ));
                        }
                    }
                    len = Some(n.clone());
                    elems.push(el.clone());
                    tys.push(t);
                }
                Ok((tys, Type::array(Type::Tuple(elems), len.expect("zip has arguments"))))
            }
            Prim::Split(m) => {
                let m = self.static_size(m, pspan)?;
                let t = self.data(&args[0])?;
                let (el, n) = self.array(&t, &args[0], "split")?;
                self.divides(&n, &m, pspan, "split factor")?;
                let q = self.exact_quotient(&n, &m);
                Ok((vec![t.clone()], Type::array(Type::array(el.clone(), m.clone()), q)))
            }
            Prim::Join => {
                let t = self.data(&args[0])?;
                let (inner, n) = self.array(&t, &args[0], "join")?;
                let (el, m) = self.array(inner, &args[0], "join (on its elements)")?;
                Ok((vec![t.clone()], Type::array(el.clone(), n.mul(&m))))
            }
            Prim::Transpose => {
                let t = self.data(&args[0])?;
                let (inner, n) = self.array(&t, &args[0], "transpose")?;
                let (el, m) = self.array(inner, &args[0], "transpose (on its elements)")?;
                Ok((vec![t.clone()], Type::array(Type::array(el.clone(), n), m)))
            }
            Prim::Slide(size, step) => {
                let (size, step) = (self.static_size(size, pspan)?, self.static_size(step, pspan)?);
                let t = self.data(&args[0])?;
                let (el, n) = self.array(&t, &args[0], "slide")?;
                if step.as_const().is_some_and(|c| c <= 0) || size.as_const().is_some_and(|c| c <= 0) {
                    return Err(TypeError::new(pspan, "slide's window size and step must be positive"));
                }
                if let (Some(a), Some(b)) = (n.as_const(), size.as_const()) {
                    if b > a {
                        return Err(TypeError::new(
                            pspan,
                            format!("slide window of size {b} is larger than the input length {a}"),
                        ));
                    }
                }
                let count = n.sub(&size).div_in(&step, &self.ranges).add(&Size::constant(1));
                if let Prim::Slide(_, raw_step) = prim {
                    self.tile_slide(raw_step, &n.sub(&size), &step, &count, pspan)?;
                }
                Ok((vec![t.clone()], Type::array(Type::array(el.clone(), size), count)))
            }
            Prim::Pad(l, r, mode) => {
                let (l, r) = (self.static_size(l, pspan)?, self.static_size(r, pspan)?);
                let t = self.data(&args[0])?;
                let (el, n) = self.array(&t, &args[0], name)?;
                if l.as_const().is_some_and(|c| c < 0) || r.as_const().is_some_and(|c| c < 0) {
                    return Err(TypeError::new(pspan, "pad amounts must not be negative"));
                }
                if let PadMode::Constant(v) = mode {
                    let (_, base) = el.dims();
                    if *base != Type::Scalar(v.kind()) {
                        return Err(TypeError::new(
                            pspan,
                            format!("pad value {v} has type {}, but the elements are made of {base}", v.kind().name()),
                        ));
                    }
                }
                if matches!(mode, PadMode::Clamp) && n.as_const() == Some(0) {
                    return Err(TypeError::new(pspan, "padClamp of an empty array"));
                }
                Ok((vec![t.clone()], Type::array(el.clone(), l.add(&n).add(&r))))
            }
            Prim::At(i) => {
                let i = self.static_size(i, pspan)?;
                let t = self.data(&args[0])?;
                let (el, n) = self.array(&t, &args[0], "at")?;
                // Constants compared directly: the largest (2^63 - 1) is where size arithmetic
                // saturates, so `n - i` would not show it out of bounds.
                let bad = i.as_const().is_some_and(|c| c < 0 || n.as_const().is_some_and(|n| c >= n))
                    || n.sub(&i).maximum_in(&Size::constant(0), &self.ranges) == Size::constant(0);
                if bad {
                    return Err(TypeError::new(
                        pspan,
                        format!("index {i} is out of bounds for an array of length {n}"),
                    ));
                }
                Ok((vec![t.clone()], el.clone()))
            }
            Prim::Get(i) => {
                let t = self.data(&args[0])?;
                match &t {
                    Type::Tuple(ts) if (*i as usize) < ts.len() => Ok((vec![t.clone()], ts[*i as usize].clone())),
                    Type::Tuple(ts) => {
                        Err(TypeError::new(span, format!("component {i} of a {}-tuple does not exist", ts.len())))
                    }
                    _ => Err(TypeError::new(span, format!("`.{i}` expects a tuple, found {}", describe(&t)))),
                }
            }
            Prim::Tuple(_) => {
                let mut tys = Vec::new();
                for a in args {
                    let t = self.data(a)?;
                    if matches!(t, Type::Fun(..)) {
                        return Err(TypeError::new(self.arg_span(a), "tuples hold values, not functions"));
                    }
                    tys.push(t);
                }
                Ok((tys.clone(), Type::Tuple(tys)))
            }
            Prim::To(space) => {
                self.check_write_target(*space, &args[0], span)?;
                let t = self.data(&args[0])?;
                Ok((vec![t.clone()], t))
            }
            Prim::AsVector(w) => {
                let t = self.data(&args[0])?;
                let (el, n) = self.array(&t, &args[0], "asVector")?;
                let Type::Scalar(k) = el else {
                    return Err(e(format!("asVector expects an array of scalars, found an array of {el}")));
                };
                if *k == ScalarKind::Bool {
                    return Err(e("asVector expects numbers, not bool".into()));
                }
                let ws = Size::constant(i64::from(w.lanes));
                self.divides(&n, &ws, pspan, "vector width")?;
                let q = self.exact_quotient(&n, &ws);
                Ok((vec![t.clone()], Type::array(Type::Vector(*k, w.lanes), q)))
            }
            Prim::AsScalar => {
                let t = self.data(&args[0])?;
                let (el, n) = self.array(&t, &args[0], "asScalar")?;
                let Type::Vector(k, w) = el else {
                    return Err(e(format!("asScalar expects an array of vectors, found an array of {el}")));
                };
                Ok((vec![t.clone()], Type::array(Type::Scalar(*k), n.mul(&Size::constant(*w as i64)))))
            }
            Prim::VectorFromScalar(w) => {
                let t = self.data(&args[0])?;
                match t {
                    Type::Scalar(k) if k != ScalarKind::Bool => Ok((vec![t], Type::Vector(k, w.lanes))),
                    _ => Err(e(format!("vectorFromScalar expects a number, found {}", describe(&t)))),
                }
            }
            Prim::Bin(op) => {
                let a = self.data(&args[0])?;
                let b = self.data(&args[1])?;
                let sym = op.infix().map_or(op.name(), |x| x.0);
                if a != b {
                    return Err(TypeError::new(
                        span,
                        format!(
                            "`{sym}` needs two operands of the same type, found {} and {}",
                            describe(&a),
                            describe(&b)
                        ),
                    ));
                }
                let (kind, width) = match &a {
                    Type::Scalar(k) => (*k, None),
                    Type::Vector(k, w) => (*k, Some(*w)),
                    _ => {
                        return Err(TypeError::new(
                            span,
                            format!("`{sym}` works on scalars and vectors, not on {}", describe(&a)),
                        ))
                    }
                };
                let ok = if op.is_logical() {
                    kind == ScalarKind::Bool
                } else if matches!(op, BinOp::Eq | BinOp::Ne) {
                    true
                } else {
                    kind != ScalarKind::Bool
                };
                if !ok {
                    return Err(TypeError::new(span, format!("`{sym}` is not defined on {a}")));
                }
                let r = if op.is_comparison() {
                    match width {
                        None => Type::BOOL,
                        Some(_) => return Err(TypeError::new(span, format!("`{sym}` compares scalars, not vectors"))),
                    }
                } else {
                    a.clone()
                };
                Ok((vec![a, b], r))
            }
            Prim::Un(op) => {
                let a = self.data(&args[0])?;
                let kind = match &a {
                    Type::Scalar(k) | Type::Vector(k, _) => *k,
                    _ => {
                        return Err(TypeError::new(
                            span,
                            format!("`{}` works on scalars and vectors, not on {}", op.name(), describe(&a)),
                        ))
                    }
                };
                let ok = match op {
                    UnOp::Not => kind == ScalarKind::Bool,
                    UnOp::Neg | UnOp::Abs => kind != ScalarKind::Bool,
                    _ => kind == ScalarKind::F32,
                };
                if !ok {
                    return Err(TypeError::new(span, format!("`{}` is not defined on {a}", op.name())));
                }
                Ok((vec![a.clone()], a))
            }
            Prim::Select => {
                let c = self.data(&args[0])?;
                let a = self.data(&args[1])?;
                let b = self.data(&args[2])?;
                if c != Type::BOOL {
                    return Err(TypeError::new(
                        self.arg_span(&args[0]),
                        format!("select's condition must be bool, found {}", describe(&c)),
                    ));
                }
                if !self.same(&a, &b) || matches!(a, Type::Fun(..)) {
                    return Err(TypeError::new(
                        span,
                        format!(
                            "select's branches must have the same value type, found {} and {}",
                            describe(&a),
                            describe(&b)
                        ),
                    ));
                }
                Ok((vec![c, a.clone(), b], a))
            }
            Prim::Cast(k) => {
                let a = self.data(&args[0])?;
                match a {
                    Type::Scalar(ScalarKind::F32 | ScalarKind::I32) => Ok((vec![a], Type::Scalar(*k))),
                    _ => {
                        Err(TypeError::new(span, format!("`{}` converts f32 and i32, not {}", k.name(), describe(&a))))
                    }
                }
            }
        }
    }

    /// `toLocal(e)` and friends: `e` must be a fully applied map or reduce, whose result is
    /// what gets written.
    fn check_write_target(&self, space: AddressSpace, a: &Arg, span: Span) -> TResult<()> {
        let what = match a {
            Arg::Node(n) => {
                let (head, args) = self.p.spine(*n);
                match self.p.node(head) {
                    Node::Prim(p @ (Prim::Map { .. } | Prim::Reduce { .. })) if args.len() == p.arity() => {
                        return Ok(())
                    }
                    Node::Prim(p) => format!("`{}`", p.name()),
                    Node::Lit(Lit::F32(_) | Lit::I32(_) | Lit::Bool(_)) => "a literal".to_string(),
                    Node::Param(_) => "a parameter".to_string(),
                    Node::Var(_) => "a variable".to_string(),
                    _ => "an expression".to_string(),
                }
            }
            Arg::Ty(..) => "a function argument".to_string(),
        };
        Err(TypeError::new(
            span,
            format!("`{}` must wrap the map or reduce whose result it writes, but wraps {what}", space.prim_name()),
        )
        .note(crate::syntax::signature_note(space.prim_name())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn ty(src: &str) -> String {
        let p = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
        match check(&p) {
            Ok(info) => info.result.to_string(),
            Err(e) => format!("error: {}", e.message),
        }
    }

    /// The windows of a padded image at stride 2, flattened and split again into rows: the
    /// mapped program `tune` wrote for a tester's strided conv, whose declared result type the
    /// checker could not prove equal (`(a*b + a + b + 1) / (a + 1)` is `b + 1`).
    #[test]
    fn strided_windows_of_a_padded_image_split_back_into_rows() {
        let t = ty("size H = 13, W = 17\n def f(x: [[f32]W]H) : [[[[f32]3]3]((W - 3)/2 + 1)]((H - 1)/2 + 1) =
            split((W - 3)/2 + 1, join(map(transpose, slide(3, 2, map(slide(3, 2), pad(1, 1, 0.0, x))))))");
        assert_eq!(t, "[[[[f32]3]3]((W - 3)/2 + 1)]((H - 1)/2 + 1)");
    }

    #[test]
    fn listing3_type() {
        let t = ty("size n, s0, s1\n def f(X: [f32]n, y: f32, z: f32) = join o map@A(map@B(fun(a => a + z)) o join o map@C(map@D(fun(a => a * y))) o split(s1)) o split(s0) $ X");
        assert_eq!(t, "[f32]n");
    }

    #[test]
    fn conv_type() {
        let t = ty("def conv(inp: [[[f32]C]W]H, ks: [[[[f32]C]KW]KH]K) = mapND2@A(fun(win => map@B(fun(k => reduce(add, 0.0, map(fun(p => p.0 * p.1), joinND3(zipND3(win, k))))), ks)), slideND2(KH, 1, KW, 1, padND2(1, 1, 0.0, inp)))");
        assert_eq!(t, "[[[f32]K](W - KW + 3)](H - KH + 3)");
    }

    /// A parameter shaped as a split makes it (a kernel's input stored tiled by an earlier
    /// kernel) joins back to the split's length; at sizes where the division is not exact, the
    /// lengths differ.
    #[test]
    fn a_parameter_shaped_by_a_split_joins_back_to_its_length() {
        let src = "size N, tA\ndef f(a: [[f32]tA](N/tA), x: [f32]N) = map(fun(p => p.0 + p.1), zip(join(a), x))";
        assert_eq!(ty(src), "[f32]N");
        let p = parse(src).unwrap();
        let at = |n: i64| crate::Sizes::new().with("N", n).with("tA", 4);
        assert!(check_with_sizes(&p, &at(12)).is_ok());
        let e = check_with_sizes(&p, &at(10)).unwrap_err();
        assert!(e.message.contains("zip of arrays of different lengths"), "{}", e.message);
        // Not every division is a split's: `[f32](N/tA)` alone assumes nothing.
        let other = "size N, tA\ndef f(a: [f32](N/tA), x: [f32]N) = map(fun(p => p.0 + p.1), zip(a, x))";
        assert!(ty(other).starts_with("error: zip of arrays of different lengths"), "{}", ty(other));
    }

    /// A padded length split and joined back is that length: `(N + 2)/2` reads `N/2 + 1`, and
    /// its `N/2` is exact as the split's division is (it was `2*(N/2) + 2`). A division the
    /// length had before is not made exact: `2*(K/2)` padded by 2 and split by 2 stays
    /// `2*(K/2) + 2` (`K` may be odd).
    #[test]
    fn a_split_of_a_padded_length_joins_back_to_it() {
        let pad = "size N\ndef f(x: [f32]N) = map(fun(p => p.0 + p.1), zip(join(split(2, pad(1, 1, 0.0, x))), pad(1, 1, 0.0, x)))";
        assert_eq!(ty(pad), "[f32](N + 2)");
        let vectors = "size N\ndef f(x: [f32]N) : [f32](N + 2) = asScalar(asVector(2, pad(1, 1, 0.0, x)))";
        assert_eq!(ty(vectors), "[f32](N + 2)");
        let p = parse(pad).unwrap();
        assert!(check_with_sizes(&p, &crate::Sizes::new().with("N", 6)).is_ok());
        assert!(check_with_sizes(&p, &crate::Sizes::new().with("N", 7)).is_err());
        let halves = "size K\ndef f(x: [f32](2 * (K / 2))) = join(split(2, pad(1, 1, 0.0, x)))";
        assert_eq!(ty(halves), "[f32](2*(K/2) + 2)");
    }

    /// A stride-2 output length declared as `(N + 1)/2` is the `(N - 1)/2 + 1` windows of
    /// `slide(1, 2, xs)` (it was refused as another type); `(N + 2)/2` is not.
    #[test]
    fn a_division_written_with_another_constant_is_the_same_size() {
        let strided = |ret: &str| {
            format!("size N = 8\ndef f(xs: [f32]N) : [f32]({ret}) = map(fun(w => at(0, w)), slide(1, 2, xs))")
        };
        assert_eq!(ty(&strided("(N + 1)/2")), "[f32]((N - 1)/2 + 1)");
        assert!(ty(&strided("(N + 2)/2")).starts_with("error: the body has type"), "{}", ty(&strided("(N + 2)/2")));
        let p = parse(&strided("(N + 1)/2")).unwrap();
        assert!(check_with_sizes(&p, &crate::Sizes::new().with("N", 7)).is_ok());
    }

    /// A program `f(x: f32, y: f32)` whose arena a test then breaks.
    fn arena() -> Program {
        parse("def f(x: f32, y: f32) = let a = x in a + y").expect("parses")
    }

    fn malformed(p: &Program) -> String {
        let e = check(p).expect_err("malformed");
        assert_eq!(check_with_sizes(p, &crate::Sizes::new()).expect_err("malformed"), e);
        assert!(e.message.starts_with("malformed program: "), "{}", e.message);
        e.message
    }

    #[test]
    fn well_formed_arenas_validate() {
        let p = arena();
        assert_eq!(p.validate(), Ok(()));
        for src in [
            "size n, s0, s1\n def f(X: [f32]n, y: f32, z: f32) = join o map@A(map@B(fun(a => a + z)) o join o map@C(map@D(fun(a => a * y))) o split(s1)) o split(s0) $ X",
            "def f(x: f32) = let a = x * 2.0 in let b = a + x in fun(c => c * b)(a)",
        ] {
            assert_eq!(parse(src).expect("parses").validate(), Ok(()), "{src}");
        }
    }

    #[test]
    fn root_out_of_range() {
        let mut p = arena();
        p.root = NodeId(p.nodes.len() as u32);
        assert!(matches!(p.validate(), Err(crate::ast::Malformed::RootOutOfRange { .. })));
        assert!(malformed(&p).contains("is not in the arena"));
        p.nodes.clear();
        p.meta.clear();
        p.root = NodeId(0);
        assert!(malformed(&p).contains("the root, node 0, is not in the arena of 0 node(s)"));
    }

    #[test]
    fn children_before_parents() {
        // A node refers to itself, to a later node, and to no node at all: each is refused.
        let refs: [fn(u32) -> u32; 3] = [|k| k, |k| k + 1, |_| 999];
        for bad in refs {
            let mut p = arena();
            let x = p.root;
            let k = p.nodes.len() as u32;
            p.root = p.push(Node::App(NodeId(bad(k)), x), Default::default());
            if bad(k) == k + 1 {
                p.push(Node::Lit(Lit::I32(0)), Default::default());
            }
            let e = p.validate().expect_err("child after parent");
            assert_eq!(e, crate::ast::Malformed::ChildNotBefore { parent: NodeId(k), child: NodeId(bad(k)) });
            assert!(malformed(&p).contains("does not come before it (children before parents)"));
        }
        // A cycle: two nodes referring to each other.
        let mut p = arena();
        let a = p.push(Node::Lit(Lit::I32(0)), Default::default());
        let b = p.push(Node::Lam(a, None), Default::default());
        p.nodes[a.index()] = Node::Lam(b, None);
        p.root = b;
        assert!(malformed(&p).contains(&format!("node {} refers to node {}", a.0, b.0)));
    }

    #[test]
    fn parameter_out_of_range() {
        let mut p = arena();
        p.root = p.push(Node::Param(2), Default::default());
        let e = malformed(&p);
        assert!(e.contains("is parameter number 2, but the program has 2 parameter(s)"), "{e}");
        // Also where the root does not reach it: the arena is broken all the same.
        let mut p = arena();
        p.push(Node::Param(7), Default::default());
        assert!(malformed(&p).contains("parameter number 7"));
    }

    #[test]
    fn unbound_variables() {
        // At the root, under one binder, and in the value of a `let` (which its own binder does
        // not cover).
        let mut p = arena();
        let v = p.push(Node::Var(0), Default::default());
        p.root = v;
        assert_eq!(p.validate(), Err(crate::ast::Malformed::UnboundVar { node: v, index: 0, depth: 0 }));
        assert!(malformed(&p).contains("variable 0 (a de Bruijn index) under 0 binder(s): it is unbound"));

        let mut p = arena();
        let v = p.push(Node::Var(1), Default::default());
        p.root = p.push(Node::Lam(v, None), Default::default());
        assert_eq!(p.validate(), Err(crate::ast::Malformed::UnboundVar { node: v, index: 1, depth: 1 }));

        let mut p = arena();
        let x = p.push(Node::Param(0), Default::default());
        let v = p.push(Node::Var(0), Default::default());
        let body = p.push(Node::Var(0), Default::default());
        p.root = p.push(Node::Let(v, body), Default::default());
        assert_eq!(p.validate(), Err(crate::ast::Malformed::UnboundVar { node: v, index: 0, depth: 0 }));
        // Bound there, the same nodes are fine; a variable shared under two depths is checked
        // at the shallower one.
        p.root = p.push(Node::Let(x, body), Default::default());
        assert_eq!(p.validate(), Ok(()));
        let lam = p.push(Node::Lam(v, None), Default::default());
        p.root = p.push(Node::App(lam, v), Default::default());
        assert_eq!(p.validate(), Err(crate::ast::Malformed::UnboundVar { node: v, index: 0, depth: 0 }));
        // Unreachable free variables are no error: they are not part of the program.
        let mut p = arena();
        p.push(Node::Var(5), Default::default());
        assert_eq!(p.validate(), Ok(()));
        assert!(check(&p).is_ok());
    }

    /// Overlapped tiling `join(map(slide(3, 1), slide(u + 2, u, xs)))` has the windows of
    /// `slide(3, 1, xs)` at symbolic sizes, and only the tile steps that tile the input are
    /// accepted at concrete sizes.
    #[test]
    fn overlapped_tiling_covers_the_windows() {
        let src = "size N = 16, u in 1..16 = 7\ndef f(xs: [f32]N) : [[f32]3](N - 2) =\n  join(map(slide(3, 1), slide(u + 2, u, xs)))";
        let p = parse(src).unwrap();
        assert_eq!(check(&p).unwrap().result.to_string(), "[[f32]3](N - 2)");
        assert!(check_with_sizes(&p, &crate::Sizes::new().with("N", 16).with("u", 7)).is_ok());
        let err = check_with_sizes(&p, &crate::Sizes::new().with("N", 16).with("u", 5)).unwrap_err();
        assert!(format!("{err:?}").contains("does not tile"), "{err:?}");
        // A constant step may leave a rest, as before.
        assert_eq!(ty("def f(a: [f32]12) = slide(3, 2, a)"), "[[f32]3]5");
        // A constant tile step records no exact division: `4*((N - 2)/4)` is not `N - 2`.
        let constant = src.replace("slide(u + 2, u, xs)", "slide(6, 4, xs)");
        assert!(check(&parse(&constant).unwrap()).is_err());
    }

    #[test]
    fn errors() {
        assert!(ty("def f(a: [f32]N, b: [f32]M) = zip(a, b)").contains("different lengths"));
        assert!(ty("def f(a: [f32]8) = split(3, a)").contains("does not divide"));
        assert!(ty("def f(a: [f32]N) = map(fun(x => x + 1), a)").contains("same type"));
        assert!(ty("def f(a: [f32]N) = toLocal(join(split(2, a)))").contains("must wrap"));
        assert!(ty("def f(a: [f32]N) = map(split(2))").contains("missing"));
    }
}
