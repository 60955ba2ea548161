//! The shape of the code, kept by a test that reads the sources: every source file opens with
//! `//!` and stays under [`MAX_LINES`]; no crate's modules import each other in a circle; the
//! server's modules sit on three floors (transports, the transport-free core, the cross-cutting
//! parts) and import only their own floor or the ones beneath; configuration builds no layers.
//!
//! An import is any path a module names outside its tests: a `use` (each leaf of its tree) or a
//! `crate::`, `super::` or `self::` path in the code, resolved to the file that defines it,
//! through re-exports (`pub use`) to where the item really lives. A module's own ancestors are
//! not counted: a child module is a part of its parent (`use super::*`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The longest a source file may be, in lines.
const MAX_LINES: usize = 900;

/// The server's floors, top to bottom, by top-level module. A module imports its own floor
/// or the ones beneath it, never one above.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "transports",
        &[
            "lib", "main", "grpc", "http", "web", "routes", "openapi", "cli",
        ],
    ),
    ("core", &["domain"]),
    ("cross-cutting", &["common"]),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every crate's `src` folder, with the crate's name.
fn crates() -> Vec<(String, PathBuf)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(workspace().join("crates")).expect("crates/") {
        let dir = entry.expect("an entry").path();
        if dir.join("src").is_dir() {
            let name = dir.file_name().expect("a name").to_string_lossy();
            all.push((
                format!("missive_{}", name.replace('-', "_")),
                dir.join("src"),
            ));
        }
    }
    all.sort();
    assert!(all.len() >= 5, "the crates: {all:?}");
    all
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_source_file_opens_with_its_purpose_and_stays_short() {
    let mut checked = 0;
    for (_, src) in crates() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file");
            let shown = file.strip_prefix(workspace()).unwrap_or(&file).display();
            assert!(
                text.starts_with("//!"),
                "{shown} does not open with a `//!` comment saying what it is for"
            );
            let lines = text.lines().count();
            assert!(
                lines <= MAX_LINES,
                "{shown} has {lines} lines, over {MAX_LINES}: split it by what its parts do"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} files read");
}

/// A module: its path below the crate root (empty for the root).
type Module = Vec<String>;

/// One crate's modules and the imports between them.
struct Graph {
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

impl Graph {
    fn of(src: &Path) -> Graph {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut modules: BTreeMap<Module, String> = BTreeMap::new();
        for file in files {
            let rel = file.strip_prefix(src).expect("under src");
            let mut path: Module = rel
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if path.first().is_some_and(|p| p == "bin") {
                continue;
            }
            // `main.rs` beside `lib.rs` is the binary, a crate of its own that uses the library:
            // it stays a module of its name here, importing the crate's public paths.
            if path.last().is_some_and(|p| p == "mod") || path == ["lib"] {
                path.pop();
            }
            // Test modules kept in files of their own are tests, not the crate's code.
            if path.iter().any(|p| p == "tests") {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("a source file");
            modules.insert(path, code_of(&text));
        }
        // What each module imports by name: `use a::b::c` makes `c` mean `a::b::c` there.
        let mut imports: HashMap<Module, HashMap<String, Vec<String>>> = HashMap::new();
        let mut paths: HashMap<Module, Vec<Vec<String>>> = HashMap::new();
        for (module, code) in &modules {
            let mut named = HashMap::new();
            let mut all = Vec::new();
            for tree in use_trees(code) {
                for leaf in expand(&tree) {
                    let (path, alias) = match leaf.split_once(" as ") {
                        Some((path, alias)) => (path.to_owned(), Some(alias.to_owned())),
                        None => (leaf.clone(), None),
                    };
                    let segments: Vec<String> = path.split("::").map(str::to_owned).collect();
                    if let Some(last) = alias.or_else(|| segments.last().cloned())
                        && last != "*"
                        && last != "self"
                    {
                        named.insert(last, segments.clone());
                    }
                    all.push(segments);
                }
            }
            all.extend(inline_paths(code));
            imports.insert(module.clone(), named);
            paths.insert(module.clone(), all);
        }
        let known: BTreeSet<Module> = modules.keys().cloned().collect();
        let mut edges = BTreeMap::new();
        for module in &known {
            let mut to = BTreeSet::new();
            for path in &paths[module] {
                // A module's ancestors are not imports: a child module is a part of its
                // parent, and sees what the parent keeps private.
                if let Some(target) = resolve(module, path, &known, &imports)
                    && !module.starts_with(&target)
                {
                    to.insert(target);
                }
            }
            edges.insert(module.clone(), to);
        }
        Graph { edges }
    }

    /// The strongly connected parts of more than one module.
    fn circles(&self) -> Vec<Vec<Module>> {
        // Tarjan's algorithm, on a few hundred nodes: recursion is fine.
        struct State<'a> {
            graph: &'a Graph,
            index: HashMap<&'a Module, usize>,
            low: HashMap<&'a Module, usize>,
            stack: Vec<&'a Module>,
            on_stack: BTreeSet<&'a Module>,
            found: Vec<Vec<Module>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in &s.graph.edges[v] {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut part = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    part.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    s.found.push(part);
                }
            }
        }
        let mut state = State {
            graph: self,
            index: HashMap::new(),
            low: HashMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for v in self.edges.keys() {
            if !state.index.contains_key(v) {
                visit(&mut state, v);
            }
        }
        state.found
    }
}

/// The file's code without comments and without its `#[cfg(test)]` modules.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if let Some(after) = trimmed.strip_prefix("#[cfg(test)]") {
            // Skip the item that follows: through its matching brace, or its `;`.
            let (mut depth, mut opened) = (0i32, false);
            let mut next = Some(after);
            while let Some(text) = next {
                for c in text.chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if (opened && depth <= 0) || (!opened && text.trim_end().ends_with(';')) {
                    break;
                }
                next = lines.next();
            }
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The trees of the `use` declarations, whitespace removed (`crate::{a,b::c}`).
fn use_trees(code: &str) -> Vec<String> {
    let mut trees = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = &rest[..at];
        let starts_item = before
            .chars()
            .last()
            .is_none_or(|c| c.is_whitespace() || c == ';' || c == '{' || c == '}' || c == ')');
        rest = &rest[at + 4..];
        if !starts_item {
            continue;
        }
        let Some(end) = rest.find(';') else { break };
        let tree: String = rest[..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace(" ::", "::")
            .replace(":: ", "::")
            .replace(", ", ",")
            .replace("{ ", "{")
            .replace(" }", "}");
        trees.push(tree);
        rest = &rest[end..];
    }
    trees
}

/// The leaves of a use tree: `a::{b,c::{d,e}}` is `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.trim_start_matches("::").to_owned()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.len().saturating_sub(1)];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(expand)
        .map(|leaf| match (prefix.is_empty(), leaf.as_str()) {
            (true, _) => leaf,
            (false, "self") => prefix.to_owned(),
            (false, _) => format!("{prefix}::{leaf}"),
        })
        .collect()
}

/// The `crate::…`, `super::…` and `self::…` paths in the code.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let is_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut chars = code.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !is_path(c) {
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = chars.peek() {
            if !is_path(d) {
                break;
            }
            end = j + d.len_utf8();
            chars.next();
        }
        let token = &code[i..end];
        if ["crate::", "super::", "self::"]
            .iter()
            .any(|p| token.starts_with(p))
        {
            found.push(
                token
                    .trim_end_matches(':')
                    .split("::")
                    .map(str::to_owned)
                    .collect(),
            );
        }
    }
    found
}

/// The module whose file defines what `path`, named in `from`, refers to; `None` outside the
/// crate.
fn resolve(
    from: &Module,
    path: &[String],
    known: &BTreeSet<Module>,
    imports: &HashMap<Module, HashMap<String, Vec<String>>>,
) -> Option<Module> {
    let mut target = absolute(from, path, known)?;
    // Follow re-exports a few steps: `crate::Config` is `crate::config::Config`.
    for _ in 0..4 {
        let module = longest_known(&target, known);
        let rest = &target[module.len()..];
        let Some(name) = rest.first() else {
            return Some(module);
        };
        let Some(imported) = imports.get(&module).and_then(|i| i.get(name)) else {
            return Some(module);
        };
        let Some(mut next) = absolute(&module, imported, known) else {
            return Some(module);
        };
        if longest_known(&next, known) == module {
            return Some(module);
        }
        next.extend(rest[1..].iter().cloned());
        target = next;
    }
    Some(longest_known(&target, known))
}

/// `path` from the crate root, if it is inside the crate: `crate::`, `super::`, `self::`, or a
/// child module of `from`.
fn absolute(from: &Module, path: &[String], known: &BTreeSet<Module>) -> Option<Module> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "super" | "self" => {
            let mut at = from.clone();
            let mut rest = path;
            while let Some(step) = rest.first() {
                match step.as_str() {
                    "super" => {
                        at.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            at.extend(rest.iter().cloned());
            Some(at)
        }
        _ => {
            let mut child = from.clone();
            child.push(first.clone());
            known.contains(&child).then(|| {
                let mut at = from.clone();
                at.extend(path.iter().cloned());
                at
            })
        }
    }
}

fn longest_known(path: &[String], known: &BTreeSet<Module>) -> Module {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| known.contains(p))
        .unwrap_or_default()
}

fn shown(module: &Module) -> String {
    if module.is_empty() {
        "(root)".into()
    } else {
        module.join("::")
    }
}

#[test]
fn no_crate_imports_its_own_modules_in_a_circle() {
    let mut left = Vec::new();
    for (name, src) in crates() {
        for circle in Graph::of(&src).circles() {
            let text = circle.iter().map(shown).collect::<Vec<_>>().join(", ");
            left.push(format!("{name}: {text}"));
        }
    }
    assert!(left.is_empty(), "import circles:\n{}", left.join("\n"));
}

#[test]
fn the_server_imports_only_its_own_floor_or_the_floors_beneath() {
    let src = workspace().join("crates/server/src");
    let graph = Graph::of(&src);
    let floor_of = |module: &Module| -> usize {
        let top = module.first().map_or("lib", String::as_str);
        FLOORS
            .iter()
            .position(|(_, modules)| modules.contains(&top))
            .unwrap_or_else(|| {
                panic!(
                    "the server's module {top} is on no floor: add it to FLOORS in {}",
                    file!()
                )
            })
    };
    let mut upward = Vec::new();
    for (from, to) in &graph.edges {
        for target in to {
            if floor_of(target) < floor_of(from) {
                upward.push(format!(
                    "{} ({}) imports {} ({})",
                    shown(from),
                    FLOORS[floor_of(from)].0,
                    shown(target),
                    FLOORS[floor_of(target)].0
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run back up:\n{}",
        upward.join("\n")
    );
    // The check reads imports at all: the transports reach the core and the core the
    // cross-cutting parts.
    let reaches = |from: &str, to: &str| {
        graph.edges.iter().any(|(f, t)| {
            f.first().is_some_and(|m| m == from)
                && t.iter().any(|m| m.first().is_some_and(|m| m == to))
        })
    };
    assert!(reaches("grpc", "domain") && reaches("domain", "common"));
}

#[test]
fn configuration_builds_no_layers_and_the_rules_do_no_io() {
    let config = std::fs::read_to_string(workspace().join("crates/server/src/common/config.rs"))
        .expect("config.rs");
    let code = code_of(&config);
    for word in ["tower", "axum", "tonic", "Layer"] {
        assert!(
            !code.contains(word),
            "config.rs names {word}: configuration builds no layers"
        );
    }
    let mut files = Vec::new();
    rust_files(&workspace().join("crates/rules/src"), &mut files);
    for file in files {
        let code = code_of(&std::fs::read_to_string(&file).expect("a source file"));
        for io in [
            "std::fs",
            "std::net",
            "std::io",
            "std::env",
            "std::thread",
            "std::process",
            "SystemTime",
            "Instant",
        ] {
            assert!(
                !code.contains(io),
                "{} names {io}: the rules read and write nothing",
                file.display()
            );
        }
    }
}

/// The core builds protobuf content in two places only: `render.rs` (records and states into
/// infos, views, history, audit logs) and the game adapters (`games/`, each game's own
/// messages); `audit.rs` reads and writes the audit log, whose format is protobuf. Every other
/// core module builds only the request and response messages that carry what those built.
#[test]
fn only_the_renderer_and_the_game_adapters_build_protobuf_in_the_core() {
    let domain = workspace().join("crates/server/src/domain");
    let mut files = Vec::new();
    rust_files(&domain, &mut files);
    let allowed = |file: &Path| {
        let relative = file.strip_prefix(&domain).expect("under domain");
        relative.starts_with("games")
            || relative.ends_with("service/render.rs")
            || relative.ends_with("audit.rs")
            || relative.ends_with("tests.rs")
    };
    let mut built = Vec::new();
    for file in files.iter().filter(|f| !allowed(f)) {
        let code = code_of(&std::fs::read_to_string(file).expect("a source file"));
        for (at, _) in code.match_indices("pb::") {
            let path: String = code[at + 4..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let name = path.rsplit("::").next().unwrap_or_default();
            let literal = code[at + 4 + path.len()..].trim_start().starts_with('{');
            // A bot seat is part of the creation request a rematch sends.
            let envelope =
                name.ends_with("Request") || name.ends_with("Response") || name == "BotSeat";
            if literal && !envelope {
                built.push(format!("{}: pb::{path}", file.display()));
            }
        }
    }
    assert!(
        built.is_empty(),
        "protobuf built outside render.rs and the game adapters: {built:#?}"
    );
}

#[test]
fn the_import_reader_sees_a_circle_and_a_re_export() {
    let dir = std::env::temp_dir().join(format!("missive-tidy-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("b")).expect("a folder");
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).expect("a file");
    write("lib.rs", "//! r\nmod a;\nmod b;\npub use b::Thing;\n");
    write(
        "a.rs",
        "//! a\nuse crate::Thing;\n#[cfg(test)]\nmod tests {\n    use crate::c::X;\n}\n",
    );
    write("b/mod.rs", "//! b\nmod inner;\npub use inner::Thing;\n");
    write(
        "b/inner.rs",
        "//! i\npub struct Thing;\nfn f() { super::super::a::g(); }\n",
    );
    let graph = Graph::of(&src);
    let module = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Module>();
    assert!(graph.edges[&module(&["a"])].contains(&module(&["b", "inner"])));
    assert_eq!(
        graph.circles(),
        vec![vec![module(&["a"]), module(&["b", "inner"])]]
    );
    std::fs::remove_dir_all(&dir).ok();
}
