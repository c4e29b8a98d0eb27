//! Every crate of the workspace keeps its modules in layers: no circle
//! among sibling modules at any level, and every reference between two
//! top-level modules is listed in the crate root's `## Layering` table,
//! which lists the modules bottom-up, each using only modules above it.
//!
//! The sources are parsed with `syn` (a full Rust parser) rather than
//! scanned line by line: paths appear in `use` trees spread over lines,
//! in expressions, types, patterns and attributes, and a scanner would have
//! to know which of those are code and which are comments or strings.
//! Macro bodies are token streams to `syn`; the paths in them are read
//! from the tokens (`a::b` sequences).
//!
//! A reference from module `A` to module `T` (the longest module path the
//! reference names) is an edge between the children of their lowest
//! common ancestor that contain them; a module referring to one of its
//! ancestors' own items (or to its own descendants) makes no edge. A path
//! counts when it starts with `crate::`, `super::`, `self::`, or with the
//! name of a child module of the module it is written in; other names are
//! other crates, local items or names a `use` brought in (the `use` itself
//! is the reference). Modules compiled only for tests (`#[cfg(test)]`)
//! take part in the circle check but not in the table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path below the crate root (`[]` is the root).
type ModPath = Vec<String>;

fn show(p: &[String]) -> String {
    if p.is_empty() {
        "crate root".into()
    } else {
        p.join("::")
    }
}

/// One module: where it is written and the paths it refers to.
#[derive(Default)]
struct Module {
    children: BTreeSet<String>,
    /// The children compiled only for tests (`#[cfg(test)]`): in the
    /// circle check, not in the table.
    test_only: BTreeSet<String>,
    /// Raw paths (segments) written in the module's own items.
    paths: Vec<Vec<String>>,
}

/// A crate root's module tree.
struct Tree {
    /// The root file's name (`main.rs`, `lib.rs`, `bin/x.rs`), for messages.
    root_name: String,
    /// The root's inner doc text.
    doc: String,
    modules: BTreeMap<ModPath, Module>,
}

/// Reads a file; `None` when it does not exist. The tests give an
/// in-memory tree.
type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// Collects paths from a module's items, not descending into inline child
/// modules (they are modules of their own).
#[derive(Default)]
struct Paths {
    paths: Vec<Vec<String>>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut v = prefix.clone();
                if n.ident != "self" {
                    v.push(n.ident.to_string());
                }
                self.paths.push(v);
            }
            syn::UseTree::Rename(r) => {
                let mut v = prefix.clone();
                v.push(r.ident.to_string());
                self.paths.push(v);
            }
            syn::UseTree::Glob(_) => self.paths.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// `a::b::c` sequences in a macro's tokens.
    fn tokens(&mut self, ts: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        let colons = |i: usize| {
            matches!((toks.get(i), toks.get(i + 1)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                    if a.as_char() == ':' && b.as_char() == ':')
        };
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(id) if colons(i + 1) && (i < 2 || !colons(i - 2)) => {
                    let mut seg = vec![id.to_string()];
                    let mut j = i + 1;
                    while colons(j) {
                        match toks.get(j + 2) {
                            Some(TokenTree::Ident(n)) => {
                                seg.push(n.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    self.paths.push(seg);
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}

impl<'ast> syn::visit::Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.paths
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The `#[path = "..."]` of a `mod` item, if any.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `#[cfg(test)]`.
fn is_cfg_test(a: &syn::Attribute) -> bool {
    a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
}

fn doc_text(attrs: &[syn::Attribute]) -> String {
    let mut s = String::new();
    for a in attrs {
        if let syn::Meta::NameValue(nv) = &a.meta {
            if nv.path.is_ident("doc") {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(l),
                    ..
                }) = &nv.value
                {
                    s.push_str(l.value().strip_prefix(' ').unwrap_or(&l.value()));
                    s.push('\n');
                }
            }
        }
    }
    s
}

/// Load the module tree of the root file `root` (`root_name` for
/// messages).
fn load(root: &Path, root_name: &str, read: Read) -> Result<Tree, String> {
    let text = read(root).ok_or_else(|| format!("cannot read {}", root.display()))?;
    let file = syn::parse_file(&text).map_err(|e| format!("{}: {e}", root.display()))?;
    let mut t = Tree {
        root_name: root_name.into(),
        doc: doc_text(&file.attrs),
        modules: BTreeMap::new(),
    };
    // The directory a root's (or mod.rs's) `mod x;` files are in.
    let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
    add_module(&mut t, Vec::new(), &file.items, &dir, read)?;
    Ok(t)
}

/// Record module `at` (items `items`; its `mod x;` files are in `dir`).
fn add_module(
    t: &mut Tree,
    at: ModPath,
    items: &[syn::Item],
    dir: &Path,
    read: Read,
) -> Result<(), String> {
    let mut paths = Paths::default();
    for item in items {
        syn::visit::visit_item(&mut paths, item);
    }
    let mut m = Module {
        paths: paths.paths,
        ..Module::default()
    };
    let mut subs = Vec::new();
    for item in items {
        if let syn::Item::Mod(im) = item {
            let name = im.ident.to_string();
            m.children.insert(name.clone());
            if im.attrs.iter().any(is_cfg_test) {
                m.test_only.insert(name.clone());
            }
            subs.push((name, im));
        }
    }
    t.modules.insert(at.clone(), m);
    for (name, im) in subs {
        let mut child = at.clone();
        child.push(name.clone());
        match &im.content {
            Some((_, items)) => add_module(t, child, items, &dir.join(&name), read)?,
            None => {
                let candidates = match path_attr(&im.attrs) {
                    Some(p) => vec![dir.join(p)],
                    None => vec![
                        dir.join(format!("{name}.rs")),
                        dir.join(&name).join("mod.rs"),
                    ],
                };
                let (file, text) = candidates
                    .iter()
                    .find_map(|c| read(c).map(|s| (c.clone(), s)))
                    .ok_or_else(|| {
                        format!(
                            "module {} of {}: none of {candidates:?} exists",
                            show(&child),
                            t.root_name
                        )
                    })?;
                let parsed =
                    syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
                // `x/mod.rs` and `x.rs` both keep their children in `x/`.
                add_module(t, child, &parsed.items, &dir.join(&name), read)?;
            }
        }
    }
    Ok(())
}

/// An edge between two sibling modules (children of `parent`), with the
/// reference that made it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    parent: ModPath,
    from: String,
    to: String,
    /// `a::b -> c::d`, the modules of one reference behind it.
    example: String,
}

impl Tree {
    /// The module a path written in `at` names, when it names one of this
    /// crate's modules: the longest module prefix.
    fn resolve(&self, at: &[String], path: &[String]) -> Option<ModPath> {
        let (mut base, rest): (ModPath, &[String]) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (at.to_vec(), &path[1..]),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                if ups > at.len() {
                    return None;
                }
                (at[..at.len() - ups].to_vec(), &path[ups..])
            }
            first if self.modules.get(at)?.children.contains(first) => (at.to_vec(), path),
            _ => return None,
        };
        for seg in rest {
            if self.modules.get(&base)?.children.contains(seg) {
                base.push(seg.clone());
            } else {
                break;
            }
        }
        Some(base)
    }

    /// Every edge between sibling modules, deduplicated by (parent, from,
    /// to), the first reference kept as the example.
    fn edges(&self) -> Vec<Edge> {
        let mut seen = BTreeMap::new();
        for (at, m) in &self.modules {
            for p in &m.paths {
                let Some(target) = self.resolve(at, p) else {
                    continue;
                };
                let common = at.iter().zip(&target).take_while(|(a, b)| a == b).count();
                if common == at.len() || common == target.len() {
                    continue; // own descendant, or an ancestor's own items
                }
                let key = (
                    at[..common].to_vec(),
                    at[common].clone(),
                    target[common].clone(),
                );
                seen.entry(key).or_insert_with(|| {
                    format!("{} -> {} ({})", show(at), show(&target), p.join("::"))
                });
            }
        }
        seen.into_iter()
            .map(|((parent, from, to), example)| Edge {
                parent,
                from,
                to,
                example,
            })
            .collect()
    }
}

/// The circles among siblings: one message per strongly connected group.
fn circles(edges: &[Edge]) -> Vec<String> {
    let mut by_parent: BTreeMap<&ModPath, BTreeMap<&str, Vec<&Edge>>> = BTreeMap::new();
    for e in edges {
        by_parent
            .entry(&e.parent)
            .or_default()
            .entry(&e.from)
            .or_default()
            .push(e);
    }
    let mut out = Vec::new();
    for (parent, graph) in by_parent {
        let mut reported: BTreeSet<&str> = BTreeSet::new();
        for &start in graph.keys() {
            if reported.contains(start) {
                continue;
            }
            // Breadth-first from `start` back to `start`: the shortest circle.
            let mut prev: BTreeMap<&str, &Edge> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut closing = None;
            while let Some(n) = queue.pop_front() {
                for e in graph.get(n).into_iter().flatten() {
                    if e.to == start {
                        closing = Some(*e);
                        break;
                    }
                    if !prev.contains_key(e.to.as_str()) {
                        prev.insert(&e.to, e);
                        queue.push_back(&e.to);
                    }
                }
                if closing.is_some() {
                    break;
                }
            }
            let Some(last) = closing else { continue };
            let mut chain = vec![last];
            let mut n = last.from.as_str();
            while n != start {
                let e = prev[n];
                chain.push(e);
                n = &e.from;
            }
            chain.reverse();
            let name = |m: &str| {
                let mut p = parent.clone();
                p.push(m.to_string());
                show(&p)
            };
            let mut s = format!("circle: {}", name(start));
            for e in &chain {
                s += &format!(" -> {}", name(&e.to));
                reported.insert(&e.from);
            }
            let why: Vec<&str> = chain.iter().map(|e| e.example.as_str()).collect();
            s += &format!(" [{}]", why.join("; "));
            out.push(s);
        }
    }
    out
}

/// The `## Layering` table: (module, uses) rows in order.
fn table(doc: &str) -> Option<Vec<(String, Vec<String>)>> {
    let mut lines = doc.lines().skip_while(|l| l.trim() != "## Layering");
    lines.next()?;
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let rows = lines
        .take_while(|l| !l.starts_with('#'))
        .skip_while(|l| !l.trim_start().starts_with('|'))
        .take_while(|l| l.trim_start().starts_with('|'))
        .skip(2) // header and separator
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').collect();
            let module = ticked(cells.first()?).into_iter().next()?;
            Some((module, cells.get(1).map(|c| ticked(c)).unwrap_or_default()))
        })
        .collect();
    Some(rows)
}

/// What is wrong with one crate root.
fn check(t: &Tree) -> Vec<String> {
    let edges = t.edges();
    let mut out = circles(&edges);
    let root = &t.modules[&Vec::new()];
    let top: BTreeSet<&String> = root.children.difference(&root.test_only).collect();
    if top.is_empty() {
        return out;
    }
    let where_ = format!("{} ## Layering", t.root_name);
    let Some(rows) = table(&t.doc) else {
        out.push(format!(
            "no ## Layering table in {}'s crate doc",
            t.root_name
        ));
        return out;
    };
    let mut above: BTreeSet<&str> = BTreeSet::new();
    let mut listed: BTreeMap<&str, &Vec<String>> = BTreeMap::new();
    for (m, uses) in &rows {
        if !top.contains(m) {
            out.push(format!(
                "{m} is in the table ({where_}) but is no top-level module"
            ));
        }
        if listed.insert(m, uses).is_some() {
            out.push(format!("{m} is in the table twice ({where_})"));
        }
        for u in uses {
            if !above.contains(u.as_str()) {
                out.push(format!(
                    "{m} uses {u}, which is not above it in the table ({where_})"
                ));
            }
        }
        above.insert(m);
    }
    for m in top {
        if !listed.contains_key(m.as_str()) {
            out.push(format!("{m} is missing from the table ({where_})"));
        }
    }
    let root_edges: Vec<&Edge> = edges
        .iter()
        .filter(|e| e.parent.is_empty() && !root.test_only.contains(&e.from))
        .collect();
    for e in &root_edges {
        if listed
            .get(e.from.as_str())
            .is_some_and(|u| !u.contains(&e.to))
        {
            out.push(format!(
                "{} -> {} not in the table ({where_}): {}",
                e.from, e.to, e.example
            ));
        }
    }
    for (m, uses) in &listed {
        for u in uses.iter() {
            if !root_edges.iter().any(|e| e.from == *m && e.to == *u) {
                out.push(format!(
                    "{m} lists {u} in the table ({where_}) but does not use it"
                ));
            }
        }
    }
    out
}

/// The crate roots under `src`: lib.rs, main.rs and each src/bin program.
fn roots(src: &Path) -> Vec<(PathBuf, String)> {
    let mut v = Vec::new();
    for name in ["lib.rs", "main.rs"] {
        if src.join(name).is_file() {
            v.push((src.join(name), name.to_string()));
        }
    }
    if let Ok(dir) = std::fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = dir.filter_map(|e| Some(e.ok()?.path())).collect();
        bins.sort();
        for p in bins {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            if p.extension().is_some_and(|e| e == "rs") {
                v.push((p, format!("bin/{name}")));
            } else if p.join("main.rs").is_file() {
                v.push((p.join("main.rs"), format!("bin/{name}/main.rs")));
            }
        }
    }
    v
}

fn read_disk(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

/// Every crate of the workspace, each checked on its own.
#[test]
fn every_crate_is_layered() {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is in the workspace")
        .to_path_buf();
    let mut crates: Vec<String> = std::fs::read_dir(ws.join("crates"))
        .expect("crates/")
        .filter_map(|e| {
            let e = e.ok()?;
            e.path()
                .join("Cargo.toml")
                .is_file()
                .then(|| format!("crates/{}", e.file_name().to_string_lossy()))
        })
        .collect();
    crates.push("xtask".into());
    crates.sort();
    let mut failing = Vec::new();
    for k in &crates {
        let mut problems = Vec::new();
        for (root, name) in roots(&ws.join(k).join("src")) {
            match load(&root, &name, &read_disk) {
                Ok(t) => problems.extend(check(&t).into_iter().map(|p| format!("{k}: {p}"))),
                Err(e) => problems.push(format!("{k}: {e}")),
            }
        }
        if problems.is_empty() {
            println!("{k}: layered");
        }
        for p in &problems {
            println!("{p}");
        }
        failing.extend(problems);
    }
    assert!(failing.is_empty(), "\n{}", failing.join("\n"));
}

/// A synthetic crate from (file, text) pairs below `src/`.
fn synthetic(files: &[(&str, &str)]) -> Result<Tree, String> {
    let map: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (Path::new("src").join(p), t.to_string()))
        .collect();
    load(Path::new("src/main.rs"), "main.rs", &move |p: &Path| {
        map.get(p).cloned()
    })
}

const TABLE: &str = "//! ## Layering\n//!\n//! | module | uses |\n//! |---|---|\n\
                     //! | `a` | |\n//! | `b` | `a` |\n";

#[test]
fn a_clean_tree_passes() {
    let t = synthetic(&[
        (
            "main.rs",
            &format!("{TABLE}mod a;\nmod b;\nfn main() {{ b::go(); }}\n#[cfg(test)]\nmod tests {{ use crate::b; }}\n"),
        ),
        ("a.rs", "pub fn f() {}\n"),
        // A child using its parent's items and its sibling below it; the
        // parent using its children; a path inside a macro.
        (
            "b.rs",
            "mod x;\nmod y;\npub fn go() { x::g(); }\npub fn h() { println!(\"{:?}\", crate::a::f()); }\n",
        ),
        ("b/x.rs", "use super::y;\npub fn g() { super::h(); y::k(); }\n"),
        ("b/y.rs", "pub fn k() {}\n#[cfg(test)]\nmod tests { use super::*; }\n"),
    ])
    .unwrap();
    assert_eq!(check(&t), Vec::<String>::new());
}

#[test]
fn a_circle_is_caught_at_any_depth() {
    // b::x -> b::y directly, b::y -> b::x through a macro and a use group.
    let t = synthetic(&[
        (
            "main.rs",
            &format!("{TABLE}mod a;\nmod b;\nfn main() {{}}\n"),
        ),
        ("a.rs", "pub fn f() {}\n"),
        (
            "b/mod.rs",
            "mod x;\nmod y;\npub fn z() { crate::a::f(); }\n",
        ),
        ("b/x.rs", "use super::y::k;\npub fn g() {}\n"),
        (
            "b/y.rs",
            "pub fn k() { assert!(super::super::b::x::g() == ()); }\n",
        ),
    ])
    .unwrap();
    let p = check(&t);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].starts_with("circle: b::x -> b::y -> b::x ["), "{p:?}");
    // Through a third module, and between nested modules of two siblings
    // (lifted to the siblings).
    let t = synthetic(&[
        (
            "main.rs",
            &format!("{TABLE}mod a;\nmod b;\nmod c;\nfn main() {{}}\n"),
        ),
        ("a.rs", "mod deep { pub fn f() { crate::b::g(); } }\n"),
        ("b.rs", "pub fn g() { crate::c::h(); }\n"),
        ("c.rs", "use crate::a::*;\npub fn h() {}\n"),
    ])
    .unwrap();
    let p = check(&t);
    assert!(
        p.iter()
            .any(|l| l.starts_with("circle: a -> b -> c -> a [")),
        "{p:?}"
    );
}

#[test]
fn table_violations_are_caught() {
    // a -> b is not listed (b is below a), c is missing, d is not a module.
    let t = synthetic(&[
        (
            "main.rs",
            &format!("{TABLE}//! | `d` | |\nmod a;\nmod b;\nmod c;\nfn main() {{}}\n"),
        ),
        ("a.rs", "pub fn f() { crate::b::g(); }\n"),
        ("b.rs", "pub fn g() {}\n"),
        ("c.rs", ""),
    ])
    .unwrap();
    let p = check(&t);
    let want = [
        "d is in the table (main.rs ## Layering) but is no top-level module",
        "c is missing from the table (main.rs ## Layering)",
        "a -> b not in the table (main.rs ## Layering): a -> b (crate::b::g)",
        "b lists a in the table (main.rs ## Layering) but does not use it",
    ];
    assert_eq!(p, want);
    // A row using a module listed below it; no table at all.
    let t = synthetic(&[
        (
            "main.rs",
            "//! ## Layering\n//!\n//! | module | uses |\n//! |---|---|\n//! | `a` | `b` |\n//! | `b` | |\nmod a;\nmod b;\n",
        ),
        ("a.rs", "use crate::b;\n"),
        ("b.rs", ""),
    ])
    .unwrap();
    assert_eq!(
        check(&t),
        ["a uses b, which is not above it in the table (main.rs ## Layering)"]
    );
    let t = synthetic(&[("main.rs", "mod a;\n"), ("a.rs", "")]).unwrap();
    assert_eq!(check(&t), ["no ## Layering table in main.rs's crate doc"]);
}

#[test]
fn a_missing_module_file_is_an_error() {
    let e = synthetic(&[("main.rs", "mod gone;\n")]).err().unwrap();
    assert!(e.contains("module gone of main.rs"), "{e}");
}
