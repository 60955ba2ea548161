//! The schema keeps to the rules of `buf.yaml` (buf's STANDARD lint, with the exceptions listed
//! there) and carries the options client generators read. `buf` itself is not needed: the rules
//! are checked on the compiled descriptor set the crate exposes. A rule the schema breaks must
//! be an exception in `buf.yaml`, and every exception there must still be needed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use prost::Message;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto, FileDescriptorSet};

const PACKAGE: &str = "missive.v1";

/// The options every file of the package sets, with the same value in each.
const OPTIONS: &[&str] = &[
    "go_package",
    "java_package",
    "java_multiple_files",
    "csharp_namespace",
    "swift_prefix",
    "objc_class_prefix",
];

fn files() -> Vec<FileDescriptorProto> {
    let set = FileDescriptorSet::decode(missive_proto::FILE_DESCRIPTOR_SET).expect("decodes");
    let files: Vec<_> = set
        .file
        .into_iter()
        .filter(|f| f.name().starts_with("missive/"))
        .collect();
    assert!(files.len() >= 4, "the schema's files are in the set");
    files
}

fn is_pascal(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

fn is_lower_snake(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.contains("__")
        && !name.ends_with('_')
}

fn is_upper_snake(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !name.contains("__")
        && !name.ends_with('_')
}

/// `LoveLetterEdition` → `LOVE_LETTER_EDITION`, as buf derives an enum's value prefix.
fn upper_snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let boundary = i > 0
            && c.is_ascii_uppercase()
            && (chars[i - 1].is_ascii_lowercase()
                || chars[i - 1].is_ascii_digit()
                || chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase()));
        if boundary {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Every broken rule, by buf's rule id, with where.
#[derive(Default)]
struct Findings(BTreeMap<&'static str, Vec<String>>);

impl Findings {
    fn check(&mut self, rule: &'static str, ok: bool, at: impl FnOnce() -> String) {
        if !ok {
            self.0.entry(rule).or_default().push(at());
        }
    }
}

fn check_enum(f: &mut Findings, scope: &str, e: &EnumDescriptorProto) {
    let name = format!("{scope}{}", e.name());
    f.check("ENUM_PASCAL_CASE", is_pascal(e.name()), || name.clone());
    f.check(
        "ENUM_NO_ALLOW_ALIAS",
        !e.options.as_ref().is_some_and(|o| o.allow_alias()),
        || name.clone(),
    );
    let prefix = format!("{}_", upper_snake(e.name()));
    for (i, value) in e.value.iter().enumerate() {
        let at = || format!("{name}.{}", value.name());
        f.check(
            "ENUM_VALUE_UPPER_SNAKE_CASE",
            is_upper_snake(value.name()),
            at,
        );
        f.check("ENUM_VALUE_PREFIX", value.name().starts_with(&prefix), at);
        if i == 0 {
            f.check("ENUM_FIRST_VALUE_ZERO", value.number() == 0, at);
        }
        if value.number() == 0 {
            f.check(
                "ENUM_ZERO_VALUE_SUFFIX",
                value.name().ends_with("_UNSPECIFIED"),
                at,
            );
        }
    }
}

fn check_message(f: &mut Findings, scope: &str, m: &DescriptorProto) {
    let name = format!("{scope}{}", m.name());
    f.check("MESSAGE_PASCAL_CASE", is_pascal(m.name()), || name.clone());
    for field in &m.field {
        let at = || format!("{name}.{}", field.name());
        f.check("FIELD_LOWER_SNAKE_CASE", is_lower_snake(field.name()), at);
        f.check(
            "FIELD_NOT_REQUIRED",
            field.label() != prost_types::field_descriptor_proto::Label::Required,
            at,
        );
    }
    // The synthetic oneof of a proto3 `optional` field (`_seat`) is protoc's, not the schema's.
    for (i, oneof) in m.oneof_decl.iter().enumerate() {
        let synthetic = m
            .field
            .iter()
            .filter(|field| field.oneof_index == Some(i as i32))
            .all(|field| field.proto3_optional());
        if !synthetic {
            f.check(
                "ONEOF_LOWER_SNAKE_CASE",
                is_lower_snake(oneof.name()),
                || format!("{name}.{}", oneof.name()),
            );
        }
    }
    let inner = format!("{name}.");
    for e in &m.enum_type {
        check_enum(f, &inner, e);
    }
    // Map entries are generated, and named `FooEntry` by protoc itself.
    for nested in m
        .nested_type
        .iter()
        .filter(|n| !n.options.as_ref().is_some_and(|o| o.map_entry()))
    {
        check_message(f, &inner, nested);
    }
}

/// Every type a file refers to, by full name (`.missive.v1.Foo`).
fn referenced_types(file: &FileDescriptorProto) -> BTreeSet<String> {
    fn walk(m: &DescriptorProto, out: &mut BTreeSet<String>) {
        out.extend(m.field.iter().map(|f| f.type_name().to_owned()));
        for nested in &m.nested_type {
            walk(nested, out);
        }
    }
    let mut out = BTreeSet::new();
    for m in &file.message_type {
        walk(m, &mut out);
    }
    for s in &file.service {
        for rpc in &s.method {
            out.insert(rpc.input_type().to_owned());
            out.insert(rpc.output_type().to_owned());
        }
    }
    out
}

/// The full names of the top-level types a file defines.
fn defined_types(file: &FileDescriptorProto) -> BTreeSet<String> {
    let package = file.package();
    file.message_type
        .iter()
        .map(|m| m.name())
        .chain(file.enum_type.iter().map(|e| e.name()))
        .map(|n| format!(".{package}.{n}"))
        .collect()
}

fn lint() -> Findings {
    let set = FileDescriptorSet::decode(missive_proto::FILE_DESCRIPTOR_SET).expect("decodes");
    let by_name: HashMap<String, FileDescriptorProto> = set
        .file
        .iter()
        .map(|f| (f.name().to_owned(), f.clone()))
        .collect();
    let mut f = Findings::default();
    let mut rpc_messages: HashMap<String, Vec<String>> = HashMap::new();
    for file in files() {
        let name = file.name().to_owned();
        let at = || name.clone();
        f.check("PACKAGE_DEFINED", !file.package().is_empty(), at);
        f.check("PACKAGE_LOWER_SNAKE_CASE", file.package() == PACKAGE, at);
        f.check(
            "PACKAGE_VERSION_SUFFIX",
            file.package().rsplit('.').next().is_some_and(|v| {
                v.strip_prefix('v')
                    .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n > 0))
            }),
            at,
        );
        f.check(
            "PACKAGE_DIRECTORY_MATCH",
            name.rsplit_once('/').map(|(dir, _)| dir.replace('/', "."))
                == Some(file.package().to_owned()),
            at,
        );
        let base = name.rsplit('/').next().unwrap_or(&name);
        f.check(
            "FILE_LOWER_SNAKE_CASE",
            base.strip_suffix(".proto").is_some_and(is_lower_snake),
            at,
        );
        f.check("SYNTAX_SPECIFIED", file.syntax() == "proto3", at);
        f.check("IMPORT_NO_PUBLIC", file.public_dependency.is_empty(), at);
        f.check("IMPORT_NO_WEAK", file.weak_dependency.is_empty(), at);
        let used = referenced_types(&file);
        for dependency in &file.dependency {
            let defined = by_name
                .get(dependency)
                .map(defined_types)
                .unwrap_or_default();
            f.check(
                "IMPORT_USED",
                defined.iter().any(|t| used.contains(t)),
                || format!("{name} imports {dependency}"),
            );
        }
        for e in &file.enum_type {
            check_enum(&mut f, "", e);
        }
        for m in &file.message_type {
            check_message(&mut f, "", m);
        }
        for service in &file.service {
            let s = service.name();
            f.check("SERVICE_PASCAL_CASE", is_pascal(s), || s.to_owned());
            f.check("SERVICE_SUFFIX", s.ends_with("Service"), || s.to_owned());
            for rpc in &service.method {
                let r = rpc.name();
                let at = || format!("{s}.{r}");
                f.check("RPC_PASCAL_CASE", is_pascal(r), at);
                let short = |t: &str| t.rsplit('.').next().unwrap_or(t).to_owned();
                f.check(
                    "RPC_REQUEST_STANDARD_NAME",
                    short(rpc.input_type()) == format!("{r}Request"),
                    at,
                );
                f.check(
                    "RPC_RESPONSE_STANDARD_NAME",
                    short(rpc.output_type()) == format!("{r}Response"),
                    at,
                );
                for t in [rpc.input_type(), rpc.output_type()] {
                    rpc_messages.entry(t.to_owned()).or_default().push(at());
                }
            }
        }
    }
    for (message, rpcs) in rpc_messages {
        f.check("RPC_REQUEST_RESPONSE_UNIQUE", rpcs.len() == 1, || {
            format!("{message} in {rpcs:?}")
        });
    }
    f
}

/// The `lint.except` list of `buf.yaml`.
fn buf_exceptions() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../buf.yaml");
    let text = std::fs::read_to_string(path).expect("buf.yaml at the repository root");
    let mut out = BTreeSet::new();
    let mut in_except = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match trimmed.strip_prefix("- ") {
            _ if trimmed == "except:" => in_except = true,
            Some(rule) if in_except => {
                out.insert(rule.trim().to_owned());
            }
            _ => in_except = false,
        }
    }
    out
}

#[test]
fn the_schema_breaks_only_the_rules_buf_yaml_excepts() {
    let findings = lint();
    let broken: BTreeSet<String> = findings.0.keys().map(|r| (*r).to_owned()).collect();
    let excepted = buf_exceptions();
    assert!(
        excepted.contains("SERVICE_SUFFIX"),
        "buf.yaml's exceptions are read: {excepted:?}"
    );
    let unexcepted: BTreeMap<_, _> = findings
        .0
        .iter()
        .filter(|(rule, _)| !excepted.contains(**rule))
        .collect();
    assert!(
        unexcepted.is_empty(),
        "the schema breaks lint rules that buf.yaml does not except: {unexcepted:#?}"
    );
    let stale: Vec<_> = excepted.difference(&broken).collect();
    assert!(
        stale.is_empty(),
        "buf.yaml excepts rules the schema keeps to (drop them): {stale:?}"
    );
}

#[test]
fn every_file_carries_the_same_options_for_client_generators() {
    let mut values: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for file in files() {
        let options = file
            .options
            .clone()
            .unwrap_or_else(|| panic!("{} has no options", file.name()));
        for &option in OPTIONS {
            let value = match option {
                "go_package" => options.go_package.clone(),
                "java_package" => options.java_package.clone(),
                "java_multiple_files" => options.java_multiple_files.map(|b| b.to_string()),
                "csharp_namespace" => options.csharp_namespace.clone(),
                "swift_prefix" => options.swift_prefix.clone(),
                "objc_class_prefix" => options.objc_class_prefix.clone(),
                other => unreachable!("{other}"),
            };
            let value = value.unwrap_or_else(|| panic!("{} sets no {option}", file.name()));
            values.entry(option).or_default().insert(value);
        }
    }
    for (option, seen) in &values {
        assert_eq!(seen.len(), 1, "{option} differs between files: {seen:?}");
    }
    let one = |o: &str| values[o].first().cloned().unwrap_or_default();
    assert_eq!(one("java_multiple_files"), "true");
    assert!(
        one("go_package").ends_with("/missive/v1;missivev1"),
        "{}",
        one("go_package")
    );
    assert!(one("java_package").ends_with(".v1"));
    assert!(one("csharp_namespace").ends_with(".V1"));
    let prefix = one("objc_class_prefix");
    assert!(
        prefix.len() >= 3 && prefix.chars().all(|c| c.is_ascii_uppercase()),
        "{prefix}"
    );
}

#[test]
fn the_checks_catch_what_they_look_for() {
    assert_eq!(upper_snake("LoveLetterEdition"), "LOVE_LETTER_EDITION");
    assert_eq!(upper_snake("AmoriDieFace"), "AMORI_DIE_FACE");
    assert_eq!(upper_snake("HTTPStatus"), "HTTP_STATUS");
    assert!(is_lower_snake("seat_count") && !is_lower_snake("seatCount"));
    assert!(is_upper_snake("MATCH_STATUS_OPEN") && !is_upper_snake("Match_OPEN"));
    let bad = EnumDescriptorProto {
        name: Some("Colour".into()),
        value: vec![prost_types::EnumValueDescriptorProto {
            name: Some("RED".into()),
            number: Some(0),
            options: None,
        }],
        ..Default::default()
    };
    let mut f = Findings::default();
    check_enum(&mut f, "", &bad);
    let rules: Vec<_> = f.0.keys().copied().collect();
    assert_eq!(rules, ["ENUM_VALUE_PREFIX", "ENUM_ZERO_VALUE_SUFFIX"]);
}

/// The comments of a file, by their element's `SourceCodeInfo` path: the leading comment, else
/// the trailing one, trimmed; elements without a comment are absent.
fn comments(file: &FileDescriptorProto) -> HashMap<Vec<i32>, String> {
    let info = file
        .source_code_info
        .as_ref()
        .unwrap_or_else(|| panic!("{} is compiled without its source info", file.name()));
    info.location
        .iter()
        .filter_map(|l| {
            let text = l
                .leading_comments
                .as_deref()
                .filter(|c| !c.trim().is_empty())
                .or(l.trailing_comments.as_deref())?
                .trim();
            (!text.is_empty()).then(|| (l.path.clone(), text.to_owned()))
        })
        .collect()
}

/// `SourceCodeInfo` path numbers, as `descriptor.proto` numbers the fields.
mod path {
    pub(crate) const FILE_MESSAGE: i32 = 4;
    pub(crate) const FILE_ENUM: i32 = 5;
    pub(crate) const FILE_SERVICE: i32 = 6;
    pub(crate) const MESSAGE_FIELD: i32 = 2;
    pub(crate) const MESSAGE_NESTED: i32 = 3;
    pub(crate) const MESSAGE_ENUM: i32 = 4;
    pub(crate) const SERVICE_METHOD: i32 = 2;
}

/// The service methods, messages, fields and enums of the schema that have no comment.
fn undocumented() -> Vec<String> {
    fn message(
        m: &DescriptorProto,
        at: Vec<i32>,
        scope: &str,
        comments: &HashMap<Vec<i32>, String>,
        out: &mut Vec<String>,
    ) {
        let name = format!("{scope}{}", m.name());
        if !comments.contains_key(&at) {
            out.push(format!("message {name}"));
        }
        for (i, field) in m.field.iter().enumerate() {
            let path = [at.as_slice(), &[path::MESSAGE_FIELD, i as i32]].concat();
            if !comments.contains_key(&path) {
                out.push(format!("field {name}.{}", field.name()));
            }
        }
        for (i, e) in m.enum_type.iter().enumerate() {
            if !comments.contains_key(&[at.as_slice(), &[path::MESSAGE_ENUM, i as i32]].concat()) {
                out.push(format!("enum {name}.{}", e.name()));
            }
        }
        let inner = format!("{name}.");
        for (i, nested) in m.nested_type.iter().enumerate() {
            // Map entries are protoc's, described by their field.
            if nested.options.as_ref().is_some_and(|o| o.map_entry()) {
                continue;
            }
            let path = [at.as_slice(), &[path::MESSAGE_NESTED, i as i32]].concat();
            message(nested, path, &inner, comments, out);
        }
    }
    let mut out = Vec::new();
    for file in files() {
        let comments = comments(&file);
        for (i, m) in file.message_type.iter().enumerate() {
            message(
                m,
                vec![path::FILE_MESSAGE, i as i32],
                "",
                &comments,
                &mut out,
            );
        }
        for (i, e) in file.enum_type.iter().enumerate() {
            if !comments.contains_key(&vec![path::FILE_ENUM, i as i32]) {
                out.push(format!("enum {}", e.name()));
            }
        }
        for (i, service) in file.service.iter().enumerate() {
            for (j, method) in service.method.iter().enumerate() {
                let at = vec![path::FILE_SERVICE, i as i32, path::SERVICE_METHOD, j as i32];
                if !comments.contains_key(&at) {
                    out.push(format!("rpc {}.{}", service.name(), method.name()));
                }
            }
        }
    }
    out
}

/// The OpenAPI document and generated clients take their descriptions from these comments:
/// an element without one reaches a client undocumented.
#[test]
fn every_rpc_message_field_and_enum_has_a_comment() {
    let missing = undocumented();
    assert!(
        missing.is_empty(),
        "{} schema elements have no comment (write one above each, in the style of the \
         others):\n{}",
        missing.len(),
        missing.join("\n")
    );
}
