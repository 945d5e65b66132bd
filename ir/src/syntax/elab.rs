//! Elaboration: surface tree to node arena. Resolves names to de Bruijn indices and parameter
//! positions, expands the n-dimensional macros, desugars composition, and labels every map.

use super::surface::{SExpr, SFile, Static};
use super::{macro_parts, prim_statics, signature_note, ParseError, KEYWORDS};
use crate::ast::{
    AddressSpace, BinOp, Lit, MapKind, Meta, Node, NodeId, PadMode, Param, Prim, Program, SizeVar, Span, UnOp, Width,
};
use crate::types::{ScalarKind, Type};
use std::collections::{BTreeSet, HashMap};

type EResult<T> = Result<T, ParseError>;

pub(super) fn elaborate(file: &SFile) -> EResult<Program> {
    let mut sizes: Vec<SizeVar> = Vec::new();
    for d in &file.sizes {
        check_binder_name(&d.name, d.span)?;
        if sizes.iter().any(|s| s.name == d.name) {
            return Err(ParseError::new(d.span, format!("size variable `{}` is declared twice", d.name)));
        }
        if d.max.is_some_and(|m| m < d.min) {
            return Err(ParseError::new(d.span, format!("empty range for `{}`", d.name)));
        }
        if let Some(v) = d.default {
            if v < d.min || d.max.is_some_and(|m| v > m) {
                let why = match d.max {
                    Some(m) => format!("is outside its range ({}..{m})", d.min),
                    None => format!("is below {}: sizes are positive", d.min),
                };
                return Err(ParseError::new(d.span, format!("default {v} of `{}` {why}", d.name)));
            }
        }
        sizes.push(SizeVar { name: d.name.clone(), min: d.min, max: d.max, default: d.default });
    }
    // Size variables may also be introduced by the parameters' types.
    let mut params = Vec::new();
    for p in &file.params {
        check_binder_name(&p.name, p.span)?;
        if params.iter().any(|q: &Param| q.name == p.name) {
            return Err(ParseError::new(p.span, format!("parameter `{}` is declared twice", p.name)));
        }
        for v in type_vars(&p.ty) {
            if !sizes.iter().any(|s| s.name == v) {
                check_binder_name(&v, p.span)?;
                sizes.push(SizeVar { name: v, min: 1, max: None, default: None });
            }
        }
        params.push(Param { name: p.name.clone(), ty: p.ty.clone() });
    }
    let size_names: BTreeSet<String> = sizes.iter().map(|s| s.name.clone()).collect();
    if let Some((t, sp)) = &file.ret {
        check_type_vars(t, *sp, &size_names)?;
    }
    for p in &params {
        if size_names.contains(&p.name) {
            let sp = file.params.iter().find(|q| q.name == p.name).map(|q| q.span).unwrap_or_default();
            return Err(ParseError::new(sp, format!("`{}` names both a size variable and a parameter", p.name)));
        }
    }
    let mut e = Elab {
        prog: Program {
            name: file.name.clone(),
            sizes,
            params,
            ret: file.ret.as_ref().map(|(t, _)| t.clone()),
            nodes: Vec::new(),
            meta: Vec::new(),
            root: NodeId(0),
        },
        scope: Vec::new(),
        size_names,
        fresh: 0,
        labels: HashMap::new(),
    };
    let root = e.expr(&file.body)?;
    e.prog.root = root;
    e.assign_labels();
    Ok(e.prog)
}

fn type_vars(t: &Type) -> Vec<String> {
    match t {
        Type::Scalar(_) | Type::Vector(..) => vec![],
        Type::Tuple(ts) => ts.iter().flat_map(type_vars).collect(),
        Type::Array(e, n) => {
            let mut v = type_vars(e);
            v.extend(n.vars());
            v
        }
        Type::Fun(a, r) => {
            let mut v = type_vars(a);
            v.extend(type_vars(r));
            v
        }
    }
}

fn check_type_vars(t: &Type, span: Span, known: &BTreeSet<String>) -> EResult<()> {
    match type_vars(t).into_iter().find(|v| !known.contains(v)) {
        Some(v) => Err(ParseError::new(span, format!("unknown size variable `{v}`"))),
        None => Ok(()),
    }
}

fn check_binder_name(name: &str, span: Span) -> EResult<()> {
    if KEYWORDS.contains(&name) || prim_statics(name).is_some() {
        return Err(ParseError::new(span, format!("`{name}` is a primitive or keyword and cannot name a variable")));
    }
    Ok(())
}

struct Elab {
    prog: Program,
    /// Binders in scope, innermost last. Names starting with `%` are generated.
    scope: Vec<String>,
    size_names: BTreeSet<String>,
    fresh: u32,
    /// User labels seen, with where.
    labels: HashMap<String, Span>,
}

impl Elab {
    /// A vector width: a literal, or a size variable with a default (its lanes at the
    /// defaults), either one of [`crate::widths::LANES`].
    fn width(&self, (s, sp): &(Static, Span)) -> EResult<Width> {
        let Static::Size(s) = s else { unreachable!("the parser reads a size here") };
        let (lanes, var) = match (s.as_const(), s.as_var()) {
            (Some(w), _) => (Some(w), None),
            (None, Some(v)) => (self.prog.sizes.iter().find(|d| d.name == v).and_then(|d| d.default), Some(v)),
            _ => return Err(ParseError::new(*sp, "a vector width is an integer or a size variable")),
        };
        let Some(lanes) = lanes else {
            let v = var.unwrap_or_default();
            return Err(ParseError::new(
                *sp,
                format!("size `{v}` is a vector width: give it a default (`size {v} = 4`)"),
            ));
        };
        let lanes = crate::widths::lanes(lanes).map_err(|m| ParseError::new(*sp, m))?;
        Ok(Width { lanes, var: var.map(str::to_string) })
    }
}

/// Surface helpers for macro expansion.
fn ident(name: &str, span: Span) -> SExpr {
    SExpr::Ident(name.to_string(), span)
}

fn sprim(
    name: &str,
    label: Option<(String, Span)>,
    statics: Vec<(Static, Span)>,
    args: Vec<SExpr>,
    span: Span,
) -> SExpr {
    SExpr::Prim { name: name.to_string(), name_span: span, label, statics, args, span }
}

fn slam(param: &str, body: SExpr, span: Span) -> SExpr {
    SExpr::Lam { params: vec![(param.to_string(), None, span)], body: Box::new(body), span }
}

impl Elab {
    fn push(&mut self, node: Node, span: Span) -> NodeId {
        self.prog.push(node, Meta { span, binder: None })
    }

    fn fresh(&mut self, hint: &str) -> String {
        self.fresh += 1;
        format!("%{hint}{}", self.fresh)
    }

    fn app(&mut self, f: NodeId, x: NodeId, span: Span) -> NodeId {
        self.push(Node::App(f, x), span)
    }

    fn bind<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> EResult<T>) -> EResult<T> {
        self.scope.push(name.to_string());
        let r = f(self);
        self.scope.pop();
        r
    }

    fn binder_meta(&mut self, id: NodeId, name: &str) {
        let hint = name.trim_start_matches('%').trim_end_matches(|c: char| c.is_ascii_digit());
        self.prog.meta[id.index()].binder = Some(if hint.is_empty() { "x".to_string() } else { hint.to_string() });
        if !name.starts_with('%') {
            self.prog.meta[id.index()].binder = Some(name.to_string());
        }
    }

    fn expr(&mut self, e: &SExpr) -> EResult<NodeId> {
        match e {
            SExpr::Ident(name, span) => self.ident(name, *span),
            SExpr::Lit(l, span) => Ok(self.push(Node::Lit(*l), *span)),
            SExpr::Lam { params, body, span } => self.lambda(params, body, *span),
            SExpr::Prim { name, name_span, label, statics, args, span } => {
                let args: Vec<&SExpr> = args.iter().collect();
                self.prim(name, *name_span, label, statics, &args, *span)
            }
            SExpr::Call(f, args, span) => {
                let args: Vec<&SExpr> = args.iter().collect();
                self.apply(f, &args, *span)
            }
            SExpr::Apply(f, x, span) => self.apply(f, &[x.as_ref()], *span),
            SExpr::Comp(fs, span) => {
                let v = self.fresh("x");
                let x = ident(&v, *span);
                let body = compose_apply(fs, vec![x], *span);
                self.lambda(&[(v, None, *span)], &body, *span)
            }
            SExpr::Let { name, name_span, value, body, span } => {
                check_binder_name(name, *name_span)?;
                let v = self.expr(value)?;
                let b = self.bind(name, |s| s.expr(body))?;
                let id = self.push(Node::Let(v, b), *span);
                self.binder_meta(id, name);
                Ok(id)
            }
            SExpr::Tuple(es, span) => {
                let mut f = self.push(Node::Prim(Prim::Tuple(es.len() as u32)), *span);
                for x in es {
                    let a = self.expr(x)?;
                    f = self.app(f, a, *span);
                }
                Ok(f)
            }
            SExpr::Field(t, i, isp, span) => {
                let i = u32::try_from(*i).map_err(|_| ParseError::new(*isp, "tuple component out of range"))?;
                let f = self.push(Node::Prim(Prim::Get(i)), *isp);
                let a = self.expr(t)?;
                Ok(self.app(f, a, *span))
            }
            SExpr::Bin(op, a, b, span) => {
                let f = self.push(Node::Prim(Prim::Bin(*op)), *span);
                let a = self.expr(a)?;
                let f = self.app(f, a, *span);
                let b = self.expr(b)?;
                Ok(self.app(f, b, *span))
            }
            SExpr::Un(UnOp::Neg, x, span) if matches!(**x, SExpr::Lit(Lit::F32(_) | Lit::I32(_), _)) => {
                let SExpr::Lit(l, _) = **x else { unreachable!("matched above") };
                let neg = match l {
                    Lit::F32(b) => Lit::f32(-f32::from_bits(b)),
                    Lit::I32(i) => Lit::I32(i.checked_neg().ok_or_else(|| ParseError::new(*span, "integer overflow"))?),
                    Lit::Bool(_) => unreachable!("matched above"),
                };
                Ok(self.push(Node::Lit(neg), *span))
            }
            SExpr::Un(op, x, span) => {
                let f = self.push(Node::Prim(Prim::Un(*op)), *span);
                let a = self.expr(x)?;
                Ok(self.app(f, a, *span))
            }
        }
    }

    fn ident(&mut self, name: &str, span: Span) -> EResult<NodeId> {
        if let Some(pos) = self.scope.iter().rposition(|s| s == name) {
            let k = (self.scope.len() - 1 - pos) as u32;
            return Ok(self.push(Node::Var(k), span));
        }
        if let Some(i) = self.prog.params.iter().position(|p| p.name == name) {
            return Ok(self.push(Node::Param(i as u32), span));
        }
        if self.size_names.contains(name) {
            return Err(ParseError::new(
                span,
                format!("`{name}` is a size variable: sizes are static arguments of primitives (like `split({name}, xs)`), not values"),
            ));
        }
        Err(ParseError::new(span, format!("unknown name `{name}`")))
    }

    fn lambda(&mut self, params: &[(String, Option<Type>, Span)], body: &SExpr, span: Span) -> EResult<NodeId> {
        let Some(((name, ty, psp), rest)) = params.split_first() else {
            return self.expr(body);
        };
        if !name.starts_with('%') {
            check_binder_name(name, *psp)?;
        }
        if let Some(t) = ty {
            check_type_vars(t, *psp, &self.size_names)?;
        }
        let b = self.bind(name, |s| s.lambda(rest, body, span))?;
        let id = self.push(Node::Lam(b, ty.clone()), span);
        self.binder_meta(id, name);
        Ok(id)
    }

    /// `f(args)`: arguments of a primitive or macro join its own; a composition applies its
    /// last function first.
    fn apply(&mut self, f: &SExpr, args: &[&SExpr], span: Span) -> EResult<NodeId> {
        match f {
            SExpr::Prim { name, name_span, label, statics, args: own, .. } => {
                let mut all: Vec<&SExpr> = own.iter().collect();
                all.extend_from_slice(args);
                self.prim(name, *name_span, label, statics, &all, span)
            }
            SExpr::Comp(fs, _) => {
                let body = compose_apply(fs, args.iter().map(|a| (*a).clone()).collect(), span);
                self.expr(&body)
            }
            _ => {
                let mut h = self.expr(f)?;
                for a in args {
                    let x = self.expr(a)?;
                    h = self.app(h, x, span);
                }
                self.not_over_applied(h, span)?;
                Ok(h)
            }
        }
    }

    /// Refuses a primitive given more arguments than it takes through `$` or a call on a
    /// parenthesized application (`(map(f) $ g) $ xs`), as [`Elab::prim`] refuses them in one call.
    fn not_over_applied(&self, h: NodeId, span: Span) -> EResult<()> {
        let (head, args) = self.prog.spine(h);
        let Node::Prim(p) = self.prog.node(head) else { return Ok(()) };
        let arity = p.arity();
        if args.len() <= arity {
            return Ok(());
        }
        let name = p.name();
        Err(ParseError::new(
            span,
            format!(
                "`{name}` takes {arity} argument{} but {} were given",
                if arity == 1 { "" } else { "s" },
                args.len()
            ),
        )
        .with_note(signature_note(name)))
    }

    fn prim(
        &mut self,
        name: &str,
        name_span: Span,
        label: &Option<(String, Span)>,
        statics: &[(Static, Span)],
        args: &[&SExpr],
        span: Span,
    ) -> EResult<NodeId> {
        if let Some((base, n)) = macro_parts(name) {
            let e = self.expand(base, n, label, statics, args, span)?;
            return self.expr(&e);
        }
        let note = || signature_note(name);
        let size = |k: usize| match &statics[k] {
            (Static::Size(s), _) => s.clone(),
            _ => unreachable!("the parser reads sizes here"),
        };
        let int = |k: usize| match &statics[k] {
            (Static::Int(i), sp) => (*i, *sp),
            _ => unreachable!("the parser reads integers here"),
        };
        for (s, sp) in statics {
            if let Static::Size(s) = s {
                if let Some(v) = s.vars().into_iter().find(|v| !self.size_names.contains(v)) {
                    return Err(ParseError::new(*sp, format!("unknown size variable `{v}`")).with_note(note()));
                }
            }
        }
        let dim = |k: usize| -> EResult<u8> {
            let (d, sp) = int(k);
            u8::try_from(d)
                .ok()
                .filter(|d| *d <= 2)
                .ok_or_else(|| ParseError::new(sp, format!("dimension must be 0, 1 or 2, not {d}")).with_note(note()))
        };
        let label_str = label.as_ref().map(|(l, sp)| (l.clone(), *sp));
        let p = match name {
            "map" | "mapSeq" | "mapVec" | "mapGlb" | "mapWrg" | "mapLcl" => {
                let kind = match name {
                    "map" => MapKind::Abstract,
                    "mapSeq" => MapKind::Seq,
                    "mapVec" => MapKind::Vec,
                    "mapGlb" => MapKind::Glb(dim(0)?),
                    "mapWrg" => MapKind::Wrg(dim(0)?),
                    _ => MapKind::Lcl(dim(0)?),
                };
                let label = match label_str {
                    Some((l, sp)) => {
                        if self.labels.insert(l.clone(), sp).is_some() {
                            return Err(ParseError::new(
                                sp,
                                format!("label `{l}` is used by two maps: labels must be unique"),
                            ));
                        }
                        l
                    }
                    None => String::new(),
                };
                Prim::Map { kind, label }
            }
            "reduce" => Prim::Reduce { seq: false },
            "reduceSeq" => Prim::Reduce { seq: true },
            "zip" => {
                if args.len() < 2 {
                    return Err(ParseError::new(span, "`zip` needs at least two arrays").with_note(note()));
                }
                Prim::Zip(args.len() as u32)
            }
            "split" => Prim::Split(size(0)),
            "join" => Prim::Join,
            "transpose" => Prim::Transpose,
            "slide" => Prim::Slide(size(0), size(1)),
            "pad" => match &statics[2] {
                (Static::Lit(l), _) => Prim::Pad(size(0), size(1), PadMode::Constant(*l)),
                _ => unreachable!("the parser reads a literal here"),
            },
            "padClamp" => Prim::Pad(size(0), size(1), PadMode::Clamp),
            "at" => Prim::At(size(0)),
            "get" => {
                let (i, sp) = int(0);
                Prim::Get(u32::try_from(i).map_err(|_| ParseError::new(sp, "tuple component out of range"))?)
            }
            "toGlobal" => Prim::To(AddressSpace::Global),
            "toLocal" => Prim::To(AddressSpace::Local),
            "toPrivate" => Prim::To(AddressSpace::Private),
            "asVector" | "vectorFromScalar" => {
                let w = self.width(&statics[0])?;
                if name == "asVector" {
                    Prim::AsVector(w)
                } else {
                    Prim::VectorFromScalar(w)
                }
            }
            "asScalar" => Prim::AsScalar,
            "select" => Prim::Select,
            "f32" => Prim::Cast(ScalarKind::F32),
            "i32" => Prim::Cast(ScalarKind::I32),
            _ => {
                if let Some(op) = BinOp::ALL.iter().find(|o| o.name() == name) {
                    Prim::Bin(*op)
                } else if let Some(op) = UnOp::ALL.iter().find(|o| o.name() == name) {
                    Prim::Un(*op)
                } else {
                    unreachable!("prim_statics knows `{name}`")
                }
            }
        };
        let arity = p.arity();
        if args.len() > arity {
            return Err(ParseError::new(
                span,
                format!(
                    "`{name}` takes {arity} argument{} but {} were given",
                    if arity == 1 { "" } else { "s" },
                    args.len()
                ),
            )
            .with_note(note()));
        }
        let mut f = self.push(Node::Prim(p), name_span);
        for a in args {
            let x = self.expr(a)?;
            f = self.app(f, x, span);
        }
        Ok(f)
    }

    /// Expands `mapNDk`, `zipNDk`, `joinNDk`, `slideNDk`, `padNDk` and `padClampNDk` into
    /// surface expressions of the basic primitives.
    fn expand(
        &mut self,
        base: &str,
        n: usize,
        label: &Option<(String, Span)>,
        statics: &[(Static, Span)],
        args: &[&SExpr],
        span: Span,
    ) -> EResult<SExpr> {
        let name = format!("{base}{n}");
        let data_arity = match base {
            "mapND" => 2,
            "zipND" => {
                if args.len() < 2 {
                    return Err(ParseError::new(span, format!("`{name}` needs at least two arrays"))
                        .with_note(signature_note(&name)));
                }
                args.len()
            }
            _ => 1,
        };
        if args.len() > data_arity {
            return Err(ParseError::new(
                span,
                format!("`{name}` takes {data_arity} arguments but {} were given", args.len()),
            )
            .with_note(signature_note(&name)));
        }
        // One-dimensional forms are the primitives themselves (partial application included).
        if n == 1 && base != "mapND" {
            let args = args.iter().map(|a| (*a).clone()).collect();
            return Ok(match base {
                "zipND" => sprim("zip", None, vec![], args, span),
                "joinND" => match args.into_iter().next() {
                    Some(x) => x,
                    None => {
                        let v = self.fresh("x");
                        slam(&v, ident(&v, span), span)
                    }
                },
                "slideND" => sprim("slide", None, statics.to_vec(), args, span),
                "padND" => sprim("pad", None, statics.to_vec(), args, span),
                _ => sprim("padClamp", None, statics.to_vec(), args, span),
            });
        }
        if args.len() < data_arity {
            // Partial application: a function of the missing arguments.
            let mut vars = Vec::new();
            let mut full: Vec<SExpr> = args.iter().map(|a| (*a).clone()).collect();
            while full.len() < data_arity {
                let v = self.fresh("x");
                full.push(ident(&v, span));
                vars.push(v);
            }
            let mut e = sprim(&name, label.clone(), statics.to_vec(), full, span);
            for v in vars.iter().rev() {
                e = slam(v, e, span);
            }
            return Ok(e);
        }
        let args: Vec<SExpr> = args.iter().map(|a| (*a).clone()).collect();
        let lower = |s: &str| format!("{s}{}", n - 1);
        Ok(match base {
            "mapND" => {
                let lab =
                    |d: usize| label.as_ref().map(|(l, sp)| (if n == 1 { l.clone() } else { format!("{l}_{d}") }, *sp));
                let mut f = args[0].clone();
                for d in (1..n).rev() {
                    f = sprim("map", lab(d), vec![], vec![f], span);
                }
                sprim("map", lab(0), vec![], vec![f, args[1].clone()], span)
            }
            "zipND" => {
                let p = self.fresh("p");
                let fields =
                    (0..args.len()).map(|i| SExpr::Field(Box::new(ident(&p, span)), i as i64, span, span)).collect();
                let f = slam(&p, sprim(&lower("zipND"), None, vec![], fields, span), span);
                sprim("map", None, vec![], vec![f, sprim("zip", None, vec![], args, span)], span)
            }
            "joinND" => {
                let mut e = args[0].clone();
                for _ in 1..n {
                    e = sprim("join", None, vec![], vec![e], span);
                }
                e
            }
            "slideND" => {
                let inner = sprim(&lower("slideND"), None, statics[2..].to_vec(), vec![], span);
                let slid = sprim(
                    "slide",
                    None,
                    statics[..2].to_vec(),
                    vec![sprim("map", None, vec![], vec![inner, args[0].clone()], span)],
                    span,
                );
                // Each window is [size1][outs2..outsn][sizes2..sizesn]: move size1 after the outs.
                let mut steps = vec![sprim("transpose", None, vec![], vec![], span)];
                for depth in 1..n - 1 {
                    let mut f = sprim("transpose", None, vec![], vec![], span);
                    for _ in 0..depth {
                        f = sprim("map", None, vec![], vec![f], span);
                    }
                    steps.insert(0, f);
                }
                let move_dim = if steps.len() == 1 { steps.pop().expect("one step") } else { SExpr::Comp(steps, span) };
                sprim("map", None, vec![], vec![move_dim, slid], span)
            }
            "padND" | "padClampND" => {
                let one = if base == "padND" { "pad" } else { "padClamp" };
                let inner = sprim(&lower(base), None, statics.to_vec(), vec![], span);
                sprim(
                    one,
                    None,
                    statics.to_vec(),
                    vec![sprim("map", None, vec![], vec![inner, args[0].clone()], span)],
                    span,
                )
            }
            _ => unreachable!("macro_parts knows `{base}`"),
        })
    }

    /// Gives every unlabelled map a label `m1`, `m2`, ... in source order, skipping user labels.
    fn assign_labels(&mut self) {
        let mut order = Vec::new();
        let mut stack = vec![self.prog.root];
        while let Some(id) = stack.pop() {
            if let Node::Prim(Prim::Map { label, .. }) = self.prog.node(id) {
                if label.is_empty() {
                    order.push(id);
                }
            }
            for c in self.prog.node(id).children().into_iter().rev() {
                stack.push(c);
            }
        }
        let mut k = 0;
        for id in order {
            let label = loop {
                k += 1;
                let l = format!("m{k}");
                if !self.labels.contains_key(&l) {
                    break l;
                }
            };
            if let Node::Prim(Prim::Map { label: slot, .. }) = &mut self.prog.nodes[id.index()] {
                *slot = label;
            }
        }
    }
}

/// `f1 o f2 o ... o fn` applied to `args`: `f1(f2(...fn(args)))`.
fn compose_apply(fs: &[SExpr], args: Vec<SExpr>, span: Span) -> SExpr {
    let mut e = call(fs.last().expect("a composition has functions").clone(), args, span);
    for f in fs[..fs.len() - 1].iter().rev() {
        e = call(f.clone(), vec![e], span);
    }
    e
}

fn call(f: SExpr, args: Vec<SExpr>, span: Span) -> SExpr {
    match f {
        SExpr::Prim { name, name_span, label, statics, args: mut own, .. } => {
            own.extend(args);
            SExpr::Prim { name, name_span, label, statics, args: own, span }
        }
        f => SExpr::Call(Box::new(f), args, span),
    }
}
