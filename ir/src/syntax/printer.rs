//! The canonical printer. Deterministic; its output parses back to an equal program.

use crate::ast::{Lit, Node, NodeId, PadMode, Prim, Program, UnOp};
use std::fmt::Write;

const WIDTH: usize = 100;

/// A layout document: text that breaks over lines only where it does not fit.
enum Doc {
    Text(String),
    /// Concatenation.
    Seq(Vec<Doc>),
    /// `open item, item close`, or one item per line, indented.
    Group {
        open: String,
        items: Vec<Doc>,
        close: &'static str,
    },
    /// `let x = value in body`, or the body on the next line.
    Let {
        head: Box<Doc>,
        body: Box<Doc>,
    },
    /// `fun(x => body)`, or the body on the next line, indented.
    Lam {
        head: String,
        body: Box<Doc>,
    },
}

impl Doc {
    fn text(s: impl Into<String>) -> Doc {
        Doc::Text(s.into())
    }

    fn flat_len(&self) -> usize {
        match self {
            Doc::Text(s) => s.len(),
            Doc::Seq(ds) => ds.iter().map(Doc::flat_len).sum(),
            Doc::Group { open, items, close } => {
                open.len()
                    + close.len()
                    + items.iter().map(Doc::flat_len).sum::<usize>()
                    + 2 * items.len().saturating_sub(1)
            }
            Doc::Let { head, body } => head.flat_len() + 4 + body.flat_len(),
            Doc::Lam { head, body } => head.len() + 2 + body.flat_len(),
        }
    }

    fn render(&self, out: &mut String, indent: usize, col: usize) -> usize {
        match self {
            Doc::Text(s) => {
                out.push_str(s);
                col + s.len()
            }
            Doc::Seq(ds) => ds.iter().fold(col, |c, d| d.render(out, indent, c)),
            Doc::Group { open, items, close } => {
                if col + self.flat_len() <= WIDTH || items.is_empty() {
                    out.push_str(open);
                    let mut c = col + open.len();
                    for (i, it) in items.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                            c += 2;
                        }
                        c = it.render(out, indent, c);
                    }
                    out.push_str(close);
                    return c + close.len();
                }
                out.push_str(open);
                let inner = indent + 2;
                let mut c = 0;
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('\n');
                    out.push_str(&" ".repeat(inner));
                    c = it.render(out, inner, inner);
                }
                out.push_str(close);
                c + close.len()
            }
            Doc::Let { head, body } => {
                let c = head.render(out, indent, col);
                if c + 4 + body.flat_len() <= WIDTH {
                    out.push_str(" in ");
                    body.render(out, indent, c + 4)
                } else {
                    out.push_str(" in\n");
                    out.push_str(&" ".repeat(indent));
                    body.render(out, indent, indent)
                }
            }
            Doc::Lam { head, body } => {
                out.push_str(head);
                let c = if col + self.flat_len() <= WIDTH {
                    out.push(' ');
                    body.render(out, indent, col + head.len() + 1)
                } else {
                    out.push('\n');
                    out.push_str(&" ".repeat(indent + 2));
                    body.render(out, indent + 2, indent + 2)
                };
                out.push(')');
                c + 1
            }
        }
    }
}

/// Prints a program in the canonical text format.
pub fn print(p: &Program) -> String {
    let mut out = String::new();
    for s in &p.sizes {
        let _ = write!(out, "size {}", s.name);
        if s.min != 1 || s.max.is_some() {
            let _ = write!(out, " in {}..", s.min);
            if let Some(m) = s.max {
                let _ = write!(out, "{m}");
            }
        }
        if let Some(d) = s.default {
            let _ = write!(out, " = {d}");
        }
        out.push('\n');
    }
    let _ = write!(out, "def {}(", p.name);
    for (i, prm) in p.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}: {}", prm.name, prm.ty);
    }
    out.push(')');
    if let Some(t) = &p.ret {
        let _ = write!(out, " : {t}");
    }
    out.push_str(" =\n  ");
    let mut pr = Printer { p, scope: Vec::new() };
    let doc = pr.expr(p.root, 0);
    doc.render(&mut out, 2, 2);
    out.push('\n');
    out
}

struct Printer<'a> {
    p: &'a Program,
    scope: Vec<String>,
}

/// Precedence of atoms and postfix forms.
const POSTFIX: u8 = 7;
const UNARY: u8 = 6;

impl Printer<'_> {
    fn fresh_name(&self, id: NodeId) -> String {
        let hint = self.p.meta.get(id.index()).and_then(|m| m.binder.clone());
        let valid = |s: &str| {
            let mut cs = s.chars();
            cs.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !super::KEYWORDS.contains(&s)
                && super::prim_statics(s).is_none()
                && super::parser::scalar_or_vector(s).is_none()
        };
        let base = hint.filter(|h| valid(h)).unwrap_or_else(|| "x".to_string());
        let taken = |s: &str| {
            self.scope.iter().any(|n| n == s)
                || self.p.params.iter().any(|q| q.name == s)
                || self.p.sizes.iter().any(|q| q.name == s)
        };
        if !taken(&base) {
            return base;
        }
        let stem = base.trim_end_matches(|c: char| c.is_ascii_digit());
        let stem = if stem.is_empty() { "x" } else { stem };
        (1..).map(|k| format!("{stem}{k}")).find(|c| !taken(c) && valid(c)).expect("some name is free")
    }

    /// Prints `id` in a context that needs precedence at least `min`.
    fn expr(&mut self, id: NodeId, min: u8) -> Doc {
        let (doc, prec) = self.expr_prec(id);
        if prec < min {
            Doc::Seq(vec![Doc::text("("), doc, Doc::text(")")])
        } else {
            doc
        }
    }

    fn expr_prec(&mut self, id: NodeId) -> (Doc, u8) {
        match self.p.node(id) {
            Node::Param(i) => {
                let name = self.p.params.get(*i as usize).map_or_else(|| format!("__param{i}"), |q| q.name.clone());
                (Doc::text(name), POSTFIX + 1)
            }
            Node::Var(k) => {
                let k = *k as usize;
                let name = if k < self.scope.len() {
                    self.scope[self.scope.len() - 1 - k].clone()
                } else {
                    format!("__unbound{k}")
                };
                (Doc::text(name), POSTFIX + 1)
            }
            Node::Lit(l) => {
                let neg = matches!(*l, Lit::I32(i) if i < 0)
                    || matches!(*l, Lit::F32(b) if f32::from_bits(b).is_sign_negative());
                (Doc::text(l.to_string()), if neg { UNARY } else { POSTFIX + 1 })
            }
            Node::Lam(..) => (self.lambda(id), POSTFIX + 1),
            Node::Let(v, b) => {
                let name = self.fresh_name(id);
                let value = self.expr(*v, 1);
                self.scope.push(name.clone());
                let body = self.expr(*b, 0);
                self.scope.pop();
                let head = Doc::Seq(vec![Doc::text(format!("let {name} = ")), value]);
                (Doc::Let { head: Box::new(head), body: Box::new(body) }, 0)
            }
            Node::Prim(_) | Node::App(..) => self.spine(id),
        }
    }

    fn lambda(&mut self, id: NodeId) -> Doc {
        let mut names = Vec::new();
        let mut cur = id;
        let pushed = self.scope.len();
        while let Node::Lam(body, ann) = self.p.node(cur) {
            let name = self.fresh_name(cur);
            names.push(match ann {
                Some(t) => format!("{name}: {t}"),
                None => name.clone(),
            });
            self.scope.push(name);
            cur = *body;
        }
        let body = self.expr(cur, 0);
        self.scope.truncate(pushed);
        Doc::Lam { head: format!("fun({} =>", names.join(", ")), body: Box::new(body) }
    }

    fn spine(&mut self, id: NodeId) -> (Doc, u8) {
        let (head, args) = self.p.spine(id);
        let Node::Prim(prim) = self.p.node(head) else {
            // A lambda or other expression applied to arguments.
            let f = self.expr(head, POSTFIX);
            let items = args.iter().map(|a| self.expr(*a, 0)).collect();
            return (Doc::Seq(vec![f, Doc::Group { open: "(".into(), items, close: ")" }]), POSTFIX);
        };
        let n = args.len();
        match prim {
            Prim::Bin(op) if n == 2 && op.infix().is_some() => {
                let (sym, prec) = op.infix().expect("checked");
                let rmin = prec + 1;
                let lmin = if op.is_comparison() { prec + 1 } else { prec };
                let a = self.expr(args[0], lmin);
                let b = self.expr(args[1], rmin);
                (Doc::Seq(vec![a, Doc::text(format!(" {sym} ")), b]), prec)
            }
            // `neg(5)`: `- 5` would read back as the literal -5, another program.
            Prim::Un(op @ (UnOp::Neg | UnOp::Not)) if n == 1 && !(*op == UnOp::Neg && self.is_lit(args[0])) => {
                let a = self.expr(args[0], UNARY);
                // `- -x` must not print as `--x`; a negative literal also needs a space.
                let sym = if *op == UnOp::Neg { "-" } else { "!" };
                let sep = if *op == UnOp::Neg && self.starts_with_minus(args[0]) { " " } else { "" };
                (Doc::Seq(vec![Doc::text(format!("{sym}{sep}")), a]), UNARY)
            }
            Prim::Get(i) if n == 1 => {
                let t = self.expr(args[0], POSTFIX);
                (Doc::Seq(vec![t, Doc::text(format!(".{i}"))]), POSTFIX)
            }
            Prim::Tuple(k) if n == *k as usize => {
                let items = args.iter().map(|a| self.expr(*a, 0)).collect();
                (Doc::Group { open: "(".into(), items, close: ")" }, POSTFIX + 1)
            }
            Prim::Tuple(k) | Prim::Zip(k) if n < *k as usize => (self.eta(prim, &args, *k as usize), POSTFIX + 1),
            _ => {
                let mut name = prim.name().to_string();
                if let Prim::Map { label, .. } = prim {
                    name = format!("{name}@{label}");
                }
                let mut items: Vec<Doc> = statics(prim).into_iter().map(Doc::Text).collect();
                items.extend(args.iter().map(|a| self.expr(*a, 0)));
                if items.is_empty() {
                    (Doc::text(name), POSTFIX + 1)
                } else {
                    (Doc::Group { open: format!("{name}("), items, close: ")" }, POSTFIX)
                }
            }
        }
    }

    fn is_lit(&self, id: NodeId) -> bool {
        matches!(self.p.node(id), Node::Lit(_))
    }

    fn starts_with_minus(&self, id: NodeId) -> bool {
        match self.p.node(id) {
            Node::Lit(_) => true,
            _ => matches!(self.p.node(self.p.spine(id).0), Node::Prim(Prim::Un(UnOp::Neg) | Prim::Bin(_))),
        }
    }

    /// A partially applied tuple or zip, which has no direct syntax: `fun(a, b => (x, a, b))`.
    fn eta(&mut self, prim: &Prim, args: &[NodeId], k: usize) -> Doc {
        let given: Vec<Doc> = args.iter().map(|a| self.expr(*a, 0)).collect();
        let names: Vec<String> = (0..k - args.len()).map(|i| format!("eta{i}")).collect();
        let mut items = given;
        items.extend(names.iter().map(|s| Doc::text(s.clone())));
        let inner = match prim {
            Prim::Tuple(_) => Doc::Group { open: "(".into(), items, close: ")" },
            _ => Doc::Group { open: "zip(".into(), items, close: ")" },
        };
        Doc::Seq(vec![Doc::text(format!("fun({} => ", names.join(", "))), inner, Doc::text(")")])
    }
}

/// Static arguments as text.
fn statics(p: &Prim) -> Vec<String> {
    match p {
        Prim::Map { kind, .. } => kind.dim().map(|d| vec![d.to_string()]).unwrap_or_default(),
        Prim::Split(s) | Prim::At(s) => vec![s.to_string()],
        Prim::Slide(a, b) => vec![a.to_string(), b.to_string()],
        Prim::Pad(l, r, PadMode::Constant(v)) => vec![l.to_string(), r.to_string(), v.to_string()],
        Prim::Pad(l, r, PadMode::Clamp) => vec![l.to_string(), r.to_string()],
        Prim::Get(i) => vec![i.to_string()],
        Prim::AsVector(w) | Prim::VectorFromScalar(w) => vec![w.var.clone().unwrap_or_else(|| w.lanes.to_string())],
        _ => vec![],
    }
}
