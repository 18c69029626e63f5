//! The layers the compiler cannot see: no import cycle among the top-level modules of any crate
//! in the workspace (ARCHITECTURE.md, "Layers"). Cargo already refuses a cycle between crates;
//! inside one crate a module may import any other, so this test reads every crate's sources
//! with `syn` and follows each path that starts with `crate::`, `super::` or `self::` (in `use`
//! items, in expressions and types, and inside macro calls such as `tracing::info!`) to the
//! top-level module it names. Test-only code (`#[cfg(test)]` items and the files they load) is
//! left out: a test may reach across layers without making them depend on each other.
//!
//! A failure names the modules in the loop and, for each edge inside it, the files that make it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// One edge: the importing module's top-level name, the imported one, and the file.
type Edges = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn no_import_cycle_among_the_top_level_modules_of_any_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = crate_roots(root);
    assert!(
        crates.len() >= 10,
        "found only {} crate roots in the members of {}/Cargo.toml",
        crates.len(),
        root.display()
    );
    let mut failures = Vec::new();
    for lib in &crates {
        let (modules, edges) = module_graph(lib);
        for cycle in cycles(&modules, &edges) {
            failures.push(describe(root, lib, &cycle, &edges));
        }
    }
    assert!(
        failures.is_empty(),
        "import cycles among top-level modules:\n\n{}",
        failures.join("\n")
    );
}

/// The check itself is checked: a two-module loop written out is found, and a chain is not.
#[test]
fn the_check_finds_a_loop_and_passes_a_chain() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
    std::fs::create_dir(src.join("b")).unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod inner;\npub struct B;\n").unwrap();
    // The loop hides in a nested file, a `super::super` path and a macro call.
    std::fs::write(
        src.join("b/inner.rs"),
        "fn f() { tracing::info!(x = ?super::super::c::C); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "pub struct C;\nfn g() -> crate::a::A { todo!() }\n#[cfg(test)]\nmod tests { use crate::b::B; }\n",
    )
    .unwrap();
    let (modules, edges) = module_graph(&src.join("lib.rs"));
    assert_eq!(
        cycles(&modules, &edges),
        vec![vec!["a".to_owned(), "b".into(), "c".into()]]
    );
    // Without the edge c → a the graph is a chain: a → b → c.
    std::fs::write(
        src.join("c.rs"),
        "pub struct C;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
    )
    .unwrap();
    let (modules, edges) = module_graph(&src.join("lib.rs"));
    assert_eq!(cycles(&modules, &edges), Vec::<Vec<String>>::new());
}

/// `src/lib.rs` (or `src/main.rs` for a binary-only member) of every workspace member, as
/// the root `Cargo.toml` lists them (`fuzz/` is outside the workspace).
fn crate_roots(root: &Path) -> Vec<PathBuf> {
    let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let members = manifest["workspace"]["members"].as_array().unwrap();
    let mut found: Vec<PathBuf> = members
        .iter()
        .filter_map(|member| {
            let dir = root.join(member.as_str()?);
            ["src/lib.rs", "src/main.rs"]
                .into_iter()
                .map(|file| dir.join(file))
                .find(|file| file.is_file())
        })
        .collect();
    found.sort();
    found
}

/// The top-level modules a crate root declares, and the edges among them.
fn module_graph(root_file: &Path) -> (Vec<String>, Edges) {
    let src = root_file.parent().unwrap();
    let file = parse(root_file);
    let modules: Vec<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if !is_test_only(&m.attrs) && m.content.is_none() => {
                Some(m.ident.to_string())
            }
            _ => None,
        })
        .collect();
    let mut edges = Edges::new();
    for top in &modules {
        let path = module_file(src, top);
        walk(&path, std::slice::from_ref(top), &mut |file, used| {
            if let Some(target) = used.filter(|t| t != top && modules.contains(t)) {
                let shown = file.strip_prefix(src).unwrap_or(file).display().to_string();
                edges
                    .entry(top.clone())
                    .or_default()
                    .entry(target)
                    .or_default()
                    .insert(shown);
            }
        });
    }
    (modules, edges)
}

/// `dir/name.rs` or `dir/name/mod.rs`.
fn module_file(dir: &Path, name: &str) -> PathBuf {
    let flat = dir.join(format!("{name}.rs"));
    if flat.is_file() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

fn parse(path: &Path) -> syn::File {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Visits the file of the module at `module_path` (from the crate root) and every file its
/// `mod x;` items load, calling `found` with the top-level module each `crate::`/`super::`/
/// `self::` path names (`None` for a path that stays in the crate root).
fn walk(path: &Path, module_path: &[String], found: &mut dyn FnMut(&Path, Option<String>)) {
    let file = parse(path);
    let mut paths = Paths {
        here: module_path.to_vec(),
        tops: Vec::new(),
        children: Vec::new(),
    };
    paths.visit_file(&file);
    for top in paths.tops {
        found(path, top);
    }
    let dir = if path.file_name().is_some_and(|n| n == "mod.rs") {
        path.parent().unwrap().to_path_buf()
    } else {
        path.with_extension("")
    };
    for child in paths.children {
        let mut inner = module_path.to_vec();
        inner.push(child.clone());
        walk(&module_file(&dir, &child), &inner, found);
    }
}

/// Collects the top-level module of every crate-relative path in one file.
struct Paths {
    /// The module the visitor is in, from the crate root (inline `mod x { … }` pushes).
    here: Vec<String>,
    tops: Vec<Option<String>>,
    /// `mod x;` items: files to visit next.
    children: Vec<String>,
}

impl Paths {
    /// The top-level module a path starting with `first, rest…` names, if it is relative to
    /// this crate.
    fn resolve(&mut self, segments: &[String]) {
        let mut base: Vec<String> = match segments.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("self") => self.here.clone(),
            Some("super") => self.here.clone(),
            _ => return,
        };
        let mut rest = &segments[1..];
        if segments[0] == "super" {
            base.pop();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        base.extend(rest.iter().cloned());
        self.tops.push(base.into_iter().next());
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.leaf(prefix, n.ident.to_string()),
            syn::UseTree::Rename(r) => self.leaf(prefix, r.ident.to_string()),
            syn::UseTree::Glob(_) => self.resolve(prefix),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn leaf(&mut self, prefix: &[String], name: String) {
        let mut full = prefix.to_vec();
        if name != "self" {
            full.push(name);
        }
        if !full.is_empty() {
            self.resolve(&full);
        }
    }

    /// `crate :: a`, `super :: a`, `self :: a` sequences inside a macro call's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(group) = &trees[i] {
                self.tokens(group.stream());
            }
            let mut segments = Vec::new();
            let mut j = i;
            while let Some(TokenTree::Ident(ident)) = trees.get(j) {
                segments.push(ident.to_string());
                let colons = matches!((trees.get(j + 1), trees.get(j + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':');
                if !colons {
                    break;
                }
                j += 3;
            }
            if segments.len() > 1 && ["crate", "super", "self"].contains(&segments[0].as_str()) {
                self.resolve(&segments);
            }
            i = j.max(i) + 1;
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test_only(&m.attrs) {
            return;
        }
        match &m.content {
            None => self.children.push(m.ident.to_string()),
            Some(_) => {
                self.here.push(m.ident.to_string());
                syn::visit::visit_item_mod(self, m);
                self.here.pop();
            }
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_test_only(&u.attrs) {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.resolve(&segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// Every strongly connected set of two or more modules (Tarjan), each sorted, in order.
fn cycles(modules: &[String], edges: &Edges) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flat_map(|m| m.keys()) {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let low = s.low[v].min(s.low[w.as_str()]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w.as_str()) {
                let low = s.low[v].min(s.index[w.as_str()]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for module in modules {
        if !state.index.contains_key(module.as_str()) {
            visit(&mut state, module);
        }
    }
    state.found.sort();
    state.found
}

fn describe(root: &Path, lib: &Path, cycle: &[String], edges: &Edges) -> String {
    let mut out = format!(
        "{}: {} modules in one loop: {}\n",
        lib.strip_prefix(root).unwrap_or(lib).display(),
        cycle.len(),
        cycle.join(", ")
    );
    for from in cycle {
        for (to, files) in edges.get(from).into_iter().flatten() {
            if cycle.contains(to) {
                let files: Vec<&str> = files.iter().map(String::as_str).collect();
                out.push_str(&format!("  {from} -> {to}  ({})\n", files.join(", ")));
            }
        }
    }
    out
}
