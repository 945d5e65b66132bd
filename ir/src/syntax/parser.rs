//! Recursive-descent parser from tokens to the surface syntax tree.

use super::lexer::{Tok, Token};
use super::surface::{SExpr, SFile, SParam, SSizeDecl, Static, StaticKind};
use super::{prim_statics, ParseError};
use crate::ast::{Lit, Span};
use crate::size::Size;
use crate::types::{ScalarKind, Type};

pub(crate) struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    depth: usize,
    chain: usize,
}

/// Nesting deeper than this (parentheses, arguments, lambdas, operands of an operator) is
/// refused rather than overflowing the stack.
const MAX_DEPTH: usize = 200;

/// Longest chain of terms that nest only in the tree, not in the text: the terms of a flat
/// sum `a + b + ...`, the steps of a `let ... in let ... in` chain, compositions, calls and
/// fields. They count once toward [`MAX_DEPTH`], and their number is limited apart, well
/// above what programs write (an unrolled 15x15 filter has 225 terms) and within what the
/// recursive passes over the tree (elaboration, checking, printing, lowering) handle on a
/// thread's default stack (tested with generated programs at this limit).
const MAX_CHAIN: usize = 2000;
/// The most operators in a row in a size expression: each one simplifies the whole size so
/// far (2,000 divisions took seconds, 10,000 minutes); sizes are short.
const MAX_SIZE_CHAIN: usize = 200;
/// The most items of a list: tuple components (in a type or an expression), a call's
/// arguments, parameters (of the program or a function) and size declarations. Checking and
/// lowering a tuple or `zip` is quadratic in its width (20,000 components took all of a
/// machine's 23 GB); programs write a few.
const MAX_LIST: usize = 256;

type PResult<T> = Result<T, ParseError>;

impl<'a> Parser<'a> {
    pub(crate) fn new(toks: &'a [Token]) -> Self {
        Parser { toks, pos: 0, depth: 0, chain: 0 }
    }

    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos].span
    }

    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].span
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(x) if *x == s)
    }

    fn is_kw(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Ident(x) if x == s)
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expected(&self, what: &str) -> ParseError {
        ParseError::new(self.span(), format!("expected {what}, found {}", self.peek().describe()))
    }

    fn expect_sym(&mut self, s: &str) -> PResult<Span> {
        if self.is_sym(s) {
            Ok(self.bump().span)
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    fn expect_kw(&mut self, s: &str) -> PResult<Span> {
        if self.is_kw(s) {
            Ok(self.bump().span)
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident(s) if !super::KEYWORDS.contains(&s.as_str()) => {
                let sp = self.bump().span;
                Ok((s, sp))
            }
            _ => Err(self.expected(what)),
        }
    }

    fn int(&mut self, what: &str) -> PResult<(i64, Span)> {
        match *self.peek() {
            Tok::Int(i) => {
                let sp = self.bump().span;
                Ok((i, sp))
            }
            _ => Err(self.expected(what)),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError::new(self.span(), format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// One more term of a chain ([`MAX_CHAIN`]).
    fn link(&mut self) -> PResult<()> {
        self.chain += 1;
        if self.chain > MAX_CHAIN {
            return Err(ParseError::new(
                self.span(),
                format!("a chain of more than {MAX_CHAIN} links (operators, `let`s, calls or compositions in a row)"),
            ));
        }
        Ok(())
    }

    /// An expression that continues a chain: at the nesting depth of the chain's start.
    fn chained_expr(&mut self) -> PResult<SExpr> {
        self.link()?;
        self.depth -= 1;
        let r = self.expr();
        self.depth += 1;
        self.chain -= 1;
        r
    }

    /// file := sizedecl* 'def' IDENT '(' params ')' [':' type] '=' expr EOF
    pub(crate) fn file(&mut self) -> PResult<SFile> {
        let mut sizes = Vec::new();
        while self.is_kw("size") {
            self.bump();
            loop {
                self.list_item(sizes.len(), "size declarations")?;
                sizes.push(self.size_decl()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        if !self.is_kw("def") {
            return Err(self.expected("`size` or `def`"));
        }
        self.bump();
        let (name, _) = self.ident("the program's name")?;
        self.expect_sym("(")?;
        let mut params = Vec::new();
        if !self.is_sym(")") {
            loop {
                self.list_item(params.len(), "parameters")?;
                let (pname, span) = self.ident("a parameter name")?;
                self.expect_sym(":")?;
                let ty = self.ty()?;
                params.push(SParam { name: pname, ty, span: span.to(self.prev_span()) });
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym(")")?;
        let ret = if self.eat_sym(":") { Some((self.ty()?, self.prev_span())) } else { None };
        self.expect_sym("=")?;
        let body = self.expr()?;
        if *self.peek() != Tok::Eof {
            return Err(self.expected("end of file (one `def` per file)"));
        }
        Ok(SFile { sizes, name, params, ret, body })
    }

    /// sizedecl := IDENT ['in' INT '..' [INT]] ['=' INT]
    fn size_decl(&mut self) -> PResult<SSizeDecl> {
        let (name, span) = self.ident("a size variable name")?;
        let (mut min, mut max) = (1, None);
        if self.is_kw("in") {
            self.bump();
            min = self.signed_int("the smallest value")?;
            self.expect_sym("..")?;
            if let Tok::Int(_) | Tok::Sym("-") = self.peek() {
                max = Some(self.signed_int("the largest value")?);
            }
        }
        let default = if self.eat_sym("=") { Some(self.signed_int("a default value")?) } else { None };
        Ok(SSizeDecl { name, min, max, default, span: span.to(self.prev_span()) })
    }

    fn signed_int(&mut self, what: &str) -> PResult<i64> {
        let neg = self.eat_sym("-");
        let (v, _) = self.int(what)?;
        Ok(if neg { -v } else { v })
    }

    /// type := scalar | vector | '(' type (',' type)+ ')' | '[' type ']' sizeatom
    pub(crate) fn ty(&mut self) -> PResult<Type> {
        self.enter()?;
        let t = self.ty_inner();
        self.leave();
        t
    }

    fn ty_inner(&mut self) -> PResult<Type> {
        if self.eat_sym("[") {
            let elem = self.ty()?;
            self.expect_sym("]")?;
            let len = self.size_atom()?;
            return Ok(Type::array(elem, len));
        }
        if self.eat_sym("(") {
            let mut ts = vec![self.ty()?];
            while self.eat_sym(",") {
                self.list_item(ts.len(), "tuple components")?;
                ts.push(self.ty()?);
            }
            self.expect_sym(")")?;
            if ts.len() == 1 {
                return Ok(ts.pop().expect("one element"));
            }
            return Ok(Type::Tuple(ts));
        }
        if let Tok::Ident(name) = self.peek().clone() {
            if let Some(t) = scalar_or_vector(&name) {
                self.bump();
                return Ok(t);
            }
        }
        Err(self.expected("a type (`f32`, `i32`, `bool`, `f32x4`, `(T, U)` or `[T]n`)"))
    }

    /// sizeatom := INT | IDENT | '(' size ')'
    fn size_atom(&mut self) -> PResult<Size> {
        match self.peek().clone() {
            Tok::Int(i) => {
                self.bump();
                Ok(Size::constant(i))
            }
            Tok::Ident(name) if !super::KEYWORDS.contains(&name.as_str()) => {
                self.bump();
                if name == "min" || name == "max" {
                    self.expect_sym("(")?;
                    let a = self.size()?;
                    self.expect_sym(",")?;
                    let b = self.size()?;
                    self.expect_sym(")")?;
                    return Ok(if name == "min" { a.minimum(&b) } else { a.maximum(&b) });
                }
                Ok(Size::var(&name))
            }
            Tok::Sym("(") => {
                self.bump();
                let s = self.size()?;
                self.expect_sym(")")?;
                Ok(s)
            }
            _ => Err(self.expected("a size (an integer, a size variable or a parenthesized size)")),
        }
    }

    /// size := term (('+'|'-') term)*; term := unary (('*'|'/'|'%') unary)*
    pub(crate) fn size(&mut self) -> PResult<Size> {
        self.enter()?;
        let r = self.size_sum();
        self.leave();
        r
    }

    fn size_sum(&mut self) -> PResult<Size> {
        let mut acc = self.size_term()?;
        for links in 0.. {
            if self.eat_sym("+") {
                self.size_link(links)?;
                acc = acc.add(&self.size_term()?);
            } else if self.eat_sym("-") {
                self.size_link(links)?;
                acc = acc.sub(&self.size_term()?);
            } else {
                break;
            }
        }
        Ok(acc)
    }

    fn size_term(&mut self) -> PResult<Size> {
        let mut acc = self.size_unary()?;
        for links in 0.. {
            let op = ["*", "/", "%"].into_iter().find(|op| self.eat_sym(op));
            let Some(op) = op else { break };
            self.size_link(links)?;
            let b = self.size_unary()?;
            acc = match op {
                "*" => acc.mul(&b),
                "/" => acc.div(&b),
                _ => acc.rem(&b),
            };
        }
        Ok(acc)
    }

    /// Minus signs in a row, counted in a loop (a recursion per sign overflowed the stack on
    /// millions of them), at most [`MAX_SIZE_CHAIN`].
    fn size_unary(&mut self) -> PResult<Size> {
        let mut negate = false;
        let mut links = 0;
        while self.eat_sym("-") {
            self.size_link(links)?;
            links += 1;
            negate = !negate;
        }
        let a = self.size_atom()?;
        Ok(if negate { Size::default().sub(&a) } else { a })
    }

    /// Refuses the item after `n` of a list (`what`: tuple components, arguments, parameters,
    /// size declarations) when the list is longer than [`MAX_LIST`].
    fn list_item(&self, n: usize, what: &str) -> PResult<()> {
        match n < MAX_LIST {
            true => Ok(()),
            false => Err(ParseError::new(self.span(), format!("more than {MAX_LIST} {what}"))),
        }
    }

    /// Refuses the operator after `links` of a size expression's chain when the chain is
    /// longer than [`MAX_SIZE_CHAIN`].
    fn size_link(&self, links: usize) -> PResult<()> {
        match links < MAX_SIZE_CHAIN {
            true => Ok(()),
            false => {
                Err(ParseError::new(self.span(), format!("a size of more than {MAX_SIZE_CHAIN} operators in a row")))
            }
        }
    }

    /// expr := comp ('$' expr)?
    pub(crate) fn expr(&mut self) -> PResult<SExpr> {
        self.enter()?;
        let r = self.expr_inner();
        self.leave();
        r
    }

    fn expr_inner(&mut self) -> PResult<SExpr> {
        if self.is_kw("let") {
            let start = self.bump().span;
            let (name, nspan) = self.ident("a variable name")?;
            self.expect_sym("=")?;
            let value = self.expr()?;
            self.expect_kw("in")?;
            let body = self.chained_expr()?;
            let span = start.to(body.span());
            return Ok(SExpr::Let { name, name_span: nspan, value: Box::new(value), body: Box::new(body), span });
        }
        let f = self.comp()?;
        if self.eat_sym("$") {
            let x = self.chained_expr()?;
            let span = f.span().to(x.span());
            return Ok(SExpr::Apply(Box::new(f), Box::new(x), span));
        }
        Ok(f)
    }

    /// comp := binary ('o' binary)*
    fn comp(&mut self) -> PResult<SExpr> {
        let first = self.binary(1)?;
        if !self.is_kw("o") {
            return Ok(first);
        }
        let mut fs = vec![first];
        while self.is_kw("o") {
            self.bump();
            self.link()?;
            fs.push(self.binary(1)?);
        }
        self.chain -= fs.len() - 1;
        let span = fs[0].span().to(fs[fs.len() - 1].span());
        Ok(SExpr::Comp(fs, span))
    }

    /// Binary operators by precedence climbing; comparisons do not chain.
    fn binary(&mut self, min_prec: u8) -> PResult<SExpr> {
        let mut lhs = self.unary()?;
        let mut chain = 0;
        loop {
            let Some((op, prec)) = self.peek_binop().filter(|(_, p)| *p >= min_prec) else {
                self.chain -= chain;
                return Ok(lhs);
            };
            // A long chain `a + b + c ...` nests deeply in the tree, not in the text.
            self.link()?;
            chain += 1;
            self.bump();
            self.enter()?;
            let rhs = self.binary(prec + 1);
            self.leave();
            let rhs = rhs?;
            if op.is_comparison() {
                if let Some((op2, _)) = self.peek_binop().filter(|(o, _)| o.is_comparison()) {
                    return Err(ParseError::new(
                        self.span(),
                        format!(
                            "comparisons do not chain: put parentheses around one side of `{}`",
                            op2.infix().map_or("", |x| x.0)
                        ),
                    ));
                }
            }
            let span = lhs.span().to(rhs.span());
            lhs = SExpr::Bin(op, Box::new(lhs), Box::new(rhs), span);
        }
    }

    fn peek_binop(&self) -> Option<(crate::ast::BinOp, u8)> {
        let Tok::Sym(s) = self.peek() else { return None };
        crate::ast::BinOp::ALL.into_iter().find_map(|op| op.infix().filter(|(sym, _)| sym == s).map(|(_, p)| (op, p)))
    }

    /// unary := ('-' | '!') unary | postfix
    fn unary(&mut self) -> PResult<SExpr> {
        let start = self.span();
        let op = if self.is_sym("-") {
            crate::ast::UnOp::Neg
        } else if self.is_sym("!") {
            crate::ast::UnOp::Not
        } else {
            return self.postfix();
        };
        self.bump();
        if op == crate::ast::UnOp::Neg {
            if let Some(min) = self.i32_min() {
                return Ok(SExpr::Lit(Lit::I32(min), start.to(self.prev_span())));
            }
        }
        self.enter()?;
        let e = self.unary();
        self.leave();
        let e = e?;
        let span = start.to(e.span());
        Ok(SExpr::Un(op, Box::new(e), span))
    }

    /// After a `-`: `2147483648` not followed by a call or a projection is `-2147483648`, the
    /// one negative literal whose magnitude is no i32 (`i32::MIN`, as the printer writes it).
    fn i32_min(&mut self) -> Option<i32> {
        let magnitude = i64::from(i32::MAX) + 1;
        let after = self.toks.get(self.pos + 1).map(|t| &t.tok);
        let applied = matches!(after, Some(Tok::Sym("(" | ".")));
        (*self.peek() == Tok::Int(magnitude) && !applied).then(|| {
            self.bump();
            i32::MIN
        })
    }

    /// postfix := primary ('(' args ')' | '.' INT)*
    fn postfix(&mut self) -> PResult<SExpr> {
        let mut e = self.primary()?;
        let mut chain = 0;
        loop {
            if self.is_sym("(") || self.is_sym(".") {
                self.link()?;
                chain += 1;
            }
            if self.is_sym("(") {
                self.bump();
                let args = self.args()?;
                let span = e.span().to(self.prev_span());
                e = SExpr::Call(Box::new(e), args, span);
            } else if self.is_sym(".") {
                self.bump();
                let (i, isp) = self.int("a tuple component number after `.`")?;
                let span = e.span().to(isp);
                e = SExpr::Field(Box::new(e), i, isp, span);
            } else {
                self.chain -= chain;
                return Ok(e);
            }
        }
    }

    /// Arguments up to and including `)`.
    fn args(&mut self) -> PResult<Vec<SExpr>> {
        let mut args = Vec::new();
        if self.eat_sym(")") {
            return Ok(args);
        }
        loop {
            self.list_item(args.len(), "arguments")?;
            args.push(self.expr()?);
            if self.eat_sym(")") {
                return Ok(args);
            }
            if !self.eat_sym(",") {
                return Err(self.expected("`,` or `)`"));
            }
        }
    }

    fn primary(&mut self) -> PResult<SExpr> {
        let span = self.span();
        match self.peek().clone() {
            Tok::Int(i) => {
                self.bump();
                let v = i32::try_from(i).map_err(|_| ParseError::new(span, format!("`{i}` does not fit in an i32")))?;
                Ok(SExpr::Lit(Lit::I32(v), span))
            }
            Tok::Float(text) => {
                self.bump();
                let v: f32 = text.parse().map_err(|_| ParseError::new(span, format!("bad float `{text}`")))?;
                if !v.is_finite() {
                    return Err(ParseError::new(span, format!("`{text}` does not fit in an f32")));
                }
                Ok(SExpr::Lit(Lit::f32(v), span))
            }
            Tok::Sym("(") => {
                self.bump();
                let mut es = vec![self.expr()?];
                while self.eat_sym(",") {
                    self.list_item(es.len(), "tuple components")?;
                    es.push(self.expr()?);
                }
                self.expect_sym(")")?;
                let full = span.to(self.prev_span());
                if es.len() == 1 {
                    Ok(es.pop().expect("one element"))
                } else {
                    Ok(SExpr::Tuple(es, full))
                }
            }
            Tok::Ident(name) => match name.as_str() {
                "true" | "false" => {
                    self.bump();
                    Ok(SExpr::Lit(Lit::Bool(name == "true"), span))
                }
                "fun" => self.lambda(),
                "let" => self.expr(),
                _ if super::KEYWORDS.contains(&name.as_str()) => Err(self.expected("an expression")),
                _ => {
                    self.bump();
                    self.named(name, span)
                }
            },
            _ => Err(self.expected("an expression")),
        }
    }

    /// fun '(' IDENT [':' type] (',' IDENT [':' type])* '=>' expr ')'
    fn lambda(&mut self) -> PResult<SExpr> {
        let start = self.bump().span;
        self.expect_sym("(")?;
        let mut params = Vec::new();
        loop {
            self.list_item(params.len(), "parameters")?;
            let (name, sp) = self.ident("a parameter name")?;
            let ty = if self.eat_sym(":") { Some(self.ty()?) } else { None };
            params.push((name, ty, sp));
            if self.eat_sym("=>") {
                break;
            }
            if !self.eat_sym(",") {
                return Err(self.expected("`,` or `=>`"));
            }
        }
        let body = self.expr()?;
        self.expect_sym(")")?;
        Ok(SExpr::Lam { params, body: Box::new(body), span: start.to(self.prev_span()) })
    }

    /// A name, possibly a primitive with a label and static arguments.
    fn named(&mut self, name: String, span: Span) -> PResult<SExpr> {
        let Some(statics) = prim_statics(&name) else {
            if self.is_sym("@") {
                let why = match name.strip_prefix("mapND") {
                    Some(k) if k.parse::<usize>().is_ok() => format!("`{name}`: mapNDk takes k from 1 to 4"),
                    _ => format!("only maps have labels, and `{name}` is not a map"),
                };
                return Err(ParseError::new(self.span(), why));
            }
            return Ok(SExpr::Ident(name, span));
        };
        let label = if self.eat_sym("@") {
            if !super::is_map_name(&name) {
                return Err(ParseError::new(
                    self.prev_span(),
                    format!("only maps have labels, and `{name}` is not a map"),
                ));
            }
            Some(self.ident("a label after `@`")?)
        } else {
            None
        };
        let mut stat = Vec::new();
        let mut args = Vec::new();
        let mut full = span.to(self.prev_span());
        if self.eat_sym("(") {
            for (k, kind) in statics.iter().enumerate() {
                if k > 0 {
                    self.expect_sym(",").map_err(|e| e.with_note(super::signature_note(&name)))?;
                }
                let sp = self.span();
                let value = match kind {
                    StaticKind::Size => {
                        Static::Size(self.size().map_err(|e| e.with_note(super::signature_note(&name)))?)
                    }
                    StaticKind::Int => Static::Int(
                        self.signed_int("an integer").map_err(|e| e.with_note(super::signature_note(&name)))?,
                    ),
                    StaticKind::Lit => Static::Lit(self.static_lit()?),
                };
                stat.push((value, sp.to(self.prev_span())));
            }
            if self.eat_sym(")") {
            } else {
                if !statics.is_empty() {
                    self.expect_sym(",").map_err(|e| e.with_note(super::signature_note(&name)))?;
                }
                args = self.args()?;
            }
            full = span.to(self.prev_span());
        } else if !statics.is_empty() {
            return Err(ParseError::new(span, format!("`{name}` needs its static arguments"))
                .with_note(super::signature_note(&name)));
        }
        Ok(SExpr::Prim { name, name_span: span, label, statics: stat, args, span: full })
    }

    fn static_lit(&mut self) -> PResult<Lit> {
        let neg = self.eat_sym("-");
        let span = self.span();
        let lit = match self.peek().clone() {
            Tok::Int(i) => Lit::I32(
                i32::try_from(if neg { -i } else { i })
                    .map_err(|_| ParseError::new(span, "integer does not fit in an i32"))?,
            ),
            Tok::Float(text) => {
                let v: f32 = text.parse().map_err(|_| ParseError::new(span, "bad float"))?;
                if !v.is_finite() {
                    return Err(ParseError::new(span, format!("`{text}` does not fit in an f32")));
                }
                Lit::f32(if neg { -v } else { v })
            }
            Tok::Ident(b) if !neg && (b == "true" || b == "false") => Lit::Bool(b == "true"),
            _ => return Err(self.expected("a literal value")),
        };
        self.bump();
        Ok(lit)
    }
}

/// `f32`, `i32`, `bool` and vector types like `f32x4`.
pub(crate) fn scalar_or_vector(name: &str) -> Option<Type> {
    let scalar = |s: &str| match s {
        "f32" => Some(ScalarKind::F32),
        "i32" => Some(ScalarKind::I32),
        "bool" => Some(ScalarKind::Bool),
        _ => None,
    };
    if let Some(k) = scalar(name) {
        return Some(Type::Scalar(k));
    }
    let (base, width) = name.split_once('x')?;
    let k = scalar(base)?;
    let w: u32 = width.parse().ok()?;
    matches!(w, 2 | 3 | 4 | 8 | 16).then_some(Type::Vector(k, w))
}
