//! The PostgreSQL schema stays distributable by `match_id` (deploy/citus/): replaying the
//! migrations of `migrations/postgres` in order, every table that exists at the end either has
//! `match_id` in its primary key and is distributed by it, co-located, in
//! `deploy/citus/distribute.sql`, or is named there as a reference or local table; and no
//! unique key of a distributed table leaves `match_id` out (Citus could not enforce it).
//!
//! The migrations are read as text, not run: statements are split outside quotes, comments and
//! dollar-quoted bodies, and the table-shaping ones (`CREATE TABLE`, `ALTER TABLE … ADD/DROP
//! CONSTRAINT/COLUMN/RENAME`, `DROP TABLE`, `CREATE UNIQUE INDEX`, `DROP INDEX`) are followed.
//! A statement that shapes tables in a way this reader does not follow is reported, not skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const DISTRIBUTION_COLUMN: &str = "match_id";

#[test]
fn every_table_is_distributed_by_match_id_or_listed_as_reference_or_local() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<_> = std::fs::read_dir(root.join("migrations/postgres"))
        .expect("migrations/postgres")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .collect();
    // sqlx runs them in version order, which is file-name order here.
    files.sort();
    assert!(!files.is_empty(), "no migrations found");
    let migrations: Vec<(String, String)> = files
        .iter()
        .map(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let text = std::fs::read_to_string(path).expect("a migration");
            (name.into_owned(), text)
        })
        .collect();
    let distribute = std::fs::read_to_string(root.join("deploy/citus/distribute.sql"))
        .expect("deploy/citus/distribute.sql");
    let problems = check(&migrations, &distribute);
    assert!(
        problems.is_empty(),
        "the schema is not distributable as deploy/citus/distribute.sql says:\n- {}\n\
         Key the new table by match_id (in its primary key) and distribute it in \
         distribute.sql, or name it there as a reference or local table \
         (see deploy/citus/README.md).",
        problems.join("\n- ")
    );
}

/// What is wrong, one sentence each; empty when the schema and `distribute.sql` agree.
fn check(migrations: &[(String, String)], distribute: &str) -> Vec<String> {
    let mut schema = Schema::default();
    for (file, text) in migrations {
        for statement in split_statements(text) {
            if let Err(problem) = schema.apply(&statement) {
                schema.problems.push(format!("{file}: {problem}"));
            }
        }
    }
    let plan = Plan::read(distribute);
    let mut problems = std::mem::take(&mut schema.problems);
    problems.extend(plan.problems.iter().cloned());

    for (name, table) in &schema.tables {
        let keyed = table
            .primary_key
            .as_ref()
            .is_some_and(|pk| pk.iter().any(|c| c == DISTRIBUTION_COLUMN));
        let key = match &table.primary_key {
            Some(pk) => format!("primary key ({})", pk.join(", ")),
            None => "no primary key".to_owned(),
        };
        if plan.reference.contains(name) || plan.local.contains(name) {
            continue;
        }
        match plan.distributed.get(name) {
            Some(_) if !keyed => problems.push(format!(
                "table {name} is distributed by {DISTRIBUTION_COLUMN} but has {key}"
            )),
            Some(_) => {}
            None if keyed => problems.push(format!(
                "table {name} ({key}) is not distributed in distribute.sql"
            )),
            None => problems.push(format!(
                "table {name} has {key} without {DISTRIBUTION_COLUMN} and distribute.sql names \
                 it neither a reference nor a local table"
            )),
        }
        if plan.distributed.contains_key(name) {
            for (unique, columns) in &table.unique {
                if !columns.iter().any(|c| c == DISTRIBUTION_COLUMN) {
                    problems.push(format!(
                        "unique key {unique} of distributed table {name} ({}) leaves out \
                         {DISTRIBUTION_COLUMN}",
                        columns.join(", ")
                    ));
                }
            }
        }
    }
    for (name, index) in &schema.unique_indexes {
        if plan.distributed.contains_key(&index.table)
            && !index.columns.iter().any(|c| c == DISTRIBUTION_COLUMN)
        {
            problems.push(format!(
                "unique index {name} on distributed table {} leaves out {DISTRIBUTION_COLUMN}",
                index.table
            ));
        }
    }

    let first = plan.order.first().cloned();
    for (name, call) in &plan.distributed {
        if call.column != DISTRIBUTION_COLUMN {
            problems.push(format!(
                "distribute.sql distributes {name} by {}, not {DISTRIBUTION_COLUMN}",
                call.column
            ));
        }
        if Some(name) != first.as_ref() && call.colocate_with != first {
            problems.push(format!(
                "distribute.sql does not co-locate {name} with {}",
                first.as_deref().unwrap_or("the first distributed table")
            ));
        }
    }
    for name in plan.distributed.keys().chain(&plan.reference) {
        if !schema.tables.contains_key(name) {
            problems.push(format!(
                "distribute.sql names {name}, which no migration leaves in place"
            ));
        }
    }
    for name in &plan.reference {
        if plan.distributed.contains_key(name) || plan.local.contains(name) {
            problems.push(format!("distribute.sql lists {name} twice"));
        }
    }
    problems
}

/// The tables as the migrations leave them.
#[derive(Debug, Default)]
struct Schema {
    tables: BTreeMap<String, Table>,
    unique_indexes: BTreeMap<String, Index>,
    problems: Vec<String>,
}

#[derive(Debug, Default)]
struct Table {
    primary_key: Option<Vec<String>>,
    /// The primary key constraint's name (PostgreSQL's default: `<table>_pkey`).
    primary_key_name: String,
    /// Unique constraints by name (a column's `UNIQUE` is named after the column).
    unique: BTreeMap<String, Vec<String>>,
}

#[derive(Debug)]
struct Index {
    table: String,
    columns: Vec<String>,
}

impl Schema {
    fn apply(&mut self, statement: &[Token]) -> Result<(), String> {
        let mut c = Cursor::new(statement);
        let Some(Token::Word(verb)) = c.bump() else {
            return Ok(());
        };
        match verb.as_str() {
            "create" => {
                c.eat_seq(&["or", "replace"]);
                c.eat_any(&["unlogged", "temp", "temporary"]);
                if c.eat("table") {
                    self.create_table(&mut c)
                } else if c.eat("unique") {
                    self.create_unique_index(&mut c)
                } else if c.peek_is("function") || c.peek_is("procedure") {
                    refuse_hidden_tables(statement)
                } else {
                    Ok(())
                }
            }
            "alter" if c.eat("table") => self.alter_table(&mut c),
            "alter" if c.eat("index") => {
                c.eat_seq(&["if", "exists"]);
                let old = c.name()?;
                if c.eat("rename") && c.eat("to") {
                    let new = c.name()?;
                    if let Some(index) = self.unique_indexes.remove(&old) {
                        self.unique_indexes.insert(new, index);
                    }
                }
                Ok(())
            }
            "drop" if c.eat("table") => {
                c.eat_seq(&["if", "exists"]);
                for name in c.name_list()? {
                    self.tables.remove(&name);
                    self.unique_indexes.retain(|_, index| index.table != name);
                }
                Ok(())
            }
            "drop" if c.eat("index") => {
                c.eat("concurrently");
                c.eat_seq(&["if", "exists"]);
                for name in c.name_list()? {
                    self.unique_indexes.remove(&name);
                }
                Ok(())
            }
            "do" => refuse_hidden_tables(statement),
            _ => Ok(()),
        }
    }

    fn create_table(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        c.eat_seq(&["if", "not", "exists"]);
        let name = c.name()?;
        if c.tokens.get(c.at) != Some(&Token::Punct('(')) {
            return Err(format!(
                "CREATE TABLE {name} without a column list (AS, OF or PARTITION OF) is not read \
                 by this check: teach crates/store/tests/citus.rs"
            ));
        }
        let mut table = Table {
            primary_key_name: format!("{name}_pkey"),
            ..Table::default()
        };
        for element in c.group()? {
            let mut e = Cursor::new(&element);
            if e.eat("like") {
                return Err(format!(
                    "CREATE TABLE {name} (LIKE …) is not read by this check: teach \
                     crates/store/tests/citus.rs"
                ));
            }
            let constraint = e.eat("constraint").then(|| e.name()).transpose()?;
            if e.eat("primary") && e.eat("key") {
                table.primary_key = Some(e.columns()?);
                if let Some(constraint) = constraint {
                    table.primary_key_name = constraint;
                }
            } else if e.eat("unique") {
                let columns = e.columns()?;
                let key = constraint.unwrap_or_else(|| format!("{name}_{}_key", columns.join("_")));
                table.unique.insert(key, columns);
            } else if constraint.is_none()
                && !e.peek_is("foreign")
                && !e.peek_is("check")
                && !e.peek_is("exclude")
            {
                table.add_column(&name, &mut e)?;
            }
        }
        self.tables.insert(name, table);
        Ok(())
    }

    fn alter_table(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        let if_exists = c.eat_seq(&["if", "exists"]);
        c.eat("only");
        let name = c.name()?;
        let Some(mut table) = self.tables.remove(&name) else {
            return if if_exists {
                Ok(())
            } else {
                Err(format!("ALTER TABLE {name}: no such table"))
            };
        };
        let mut name_now = name.clone();
        for action in c.split_commas() {
            let mut a = Cursor::new(&action);
            if a.eat("add") {
                let constraint = a.eat("constraint").then(|| a.name()).transpose()?;
                if a.eat("primary") && a.eat("key") {
                    table.primary_key = Some(a.columns()?);
                    table.primary_key_name =
                        constraint.unwrap_or_else(|| format!("{name_now}_pkey"));
                } else if a.eat("unique") {
                    let columns = a.columns()?;
                    let key = constraint
                        .unwrap_or_else(|| format!("{name_now}_{}_key", columns.join("_")));
                    table.unique.insert(key, columns);
                } else if constraint.is_none() {
                    a.eat("column");
                    a.eat_seq(&["if", "not", "exists"]);
                    table.add_column(&name_now, &mut a)?;
                }
            } else if a.eat("drop") {
                if a.eat("constraint") {
                    a.eat_seq(&["if", "exists"]);
                    let constraint = a.name()?;
                    if constraint == table.primary_key_name {
                        table.primary_key = None;
                    }
                    table.unique.remove(&constraint);
                } else {
                    a.eat("column");
                    a.eat_seq(&["if", "exists"]);
                    let column = a.name()?;
                    if table
                        .primary_key
                        .as_ref()
                        .is_some_and(|pk| pk.contains(&column))
                    {
                        table.primary_key = None;
                    }
                    table.unique.retain(|_, columns| !columns.contains(&column));
                }
            } else if a.eat("rename") {
                if a.eat("to") {
                    name_now = a.name()?;
                } else if a.eat("constraint") {
                    let old = a.name()?;
                    a.eat("to");
                    let new = a.name()?;
                    if old == table.primary_key_name {
                        table.primary_key_name = new.clone();
                    }
                    if let Some(columns) = table.unique.remove(&old) {
                        table.unique.insert(new, columns);
                    }
                } else {
                    a.eat("column");
                    let old = a.name()?;
                    a.eat("to");
                    let new = a.name()?;
                    let rename = |columns: &mut Vec<String>| {
                        columns
                            .iter_mut()
                            .filter(|c| **c == old)
                            .for_each(|c| c.clone_from(&new));
                    };
                    if let Some(pk) = table.primary_key.as_mut() {
                        rename(pk);
                    }
                    table.unique.values_mut().for_each(rename);
                    self.unique_indexes
                        .values_mut()
                        .filter(|index| index.table == name)
                        .for_each(|index| rename(&mut index.columns));
                }
            }
        }
        if name_now != name {
            self.unique_indexes
                .values_mut()
                .filter(|index| index.table == name)
                .for_each(|index| index.table.clone_from(&name_now));
        }
        self.tables.insert(name_now, table);
        Ok(())
    }

    fn create_unique_index(&mut self, c: &mut Cursor<'_>) -> Result<(), String> {
        if !c.eat("index") {
            return Ok(());
        }
        c.eat("concurrently");
        c.eat_seq(&["if", "not", "exists"]);
        let name = if c.peek_is("on") {
            None
        } else {
            Some(c.name()?)
        };
        if !c.eat("on") {
            return Err("CREATE UNIQUE INDEX without ON".to_owned());
        }
        c.eat("only");
        let table = c.name()?;
        if c.eat("using") {
            c.name()?;
        }
        let columns = c.columns()?;
        let name = name.unwrap_or_else(|| format!("{table}_{}_idx", columns.join("_")));
        if !self.tables.contains_key(&table) {
            return Err(format!(
                "CREATE UNIQUE INDEX {name} on {table}: no such table"
            ));
        }
        self.unique_indexes.insert(name, Index { table, columns });
        Ok(())
    }
}

impl Table {
    /// A column definition: its name, and `PRIMARY KEY` or `UNIQUE` among its constraints.
    fn add_column(&mut self, table: &str, c: &mut Cursor<'_>) -> Result<(), String> {
        let column = c.name()?;
        let mut depth = 0usize;
        let mut previous: Option<&Token> = None;
        while let Some(token) = c.bump() {
            match token {
                Token::Punct('(') => depth += 1,
                Token::Punct(')') => depth = depth.saturating_sub(1),
                Token::Word(w) if depth == 0 && w == "key" => {
                    if matches!(previous, Some(Token::Word(p)) if p == "primary") {
                        self.primary_key = Some(vec![column.clone()]);
                    }
                }
                Token::Word(w) if depth == 0 && w == "unique" => {
                    self.unique
                        .insert(format!("{table}_{column}_key"), vec![column.clone()]);
                }
                _ => {}
            }
            previous = Some(token);
        }
        Ok(())
    }
}

/// A function or `DO` block could create tables this check never sees: refuse those that
/// mention one.
fn refuse_hidden_tables(statement: &[Token]) -> Result<(), String> {
    let text = statement
        .iter()
        .map(|t| match t {
            Token::Word(w) | Token::Str(w) => w.to_lowercase(),
            Token::Punct(p) => p.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.contains("create table") || text.contains("alter table") || text.contains("drop table")
    {
        return Err(
            "a table is shaped inside a function or DO block, which this check does not read: \
             write the DDL as plain statements"
                .to_owned(),
        );
    }
    Ok(())
}

/// What `distribute.sql` does with each table.
#[derive(Debug, Default)]
struct Plan {
    distributed: BTreeMap<String, Distribution>,
    /// Distributed tables in the order the script distributes them.
    order: Vec<String>,
    reference: BTreeSet<String>,
    /// `citus_add_local_table_to_metadata('…')`, or a comment line `-- local: <table> …`.
    local: BTreeSet<String>,
    problems: Vec<String>,
}

#[derive(Debug)]
struct Distribution {
    column: String,
    colocate_with: Option<String>,
}

impl Plan {
    fn read(sql: &str) -> Plan {
        let mut plan = Plan::default();
        for line in sql.lines() {
            if let Some(rest) = line.trim_start().strip_prefix("-- local:")
                && let Some(name) = rest.split_whitespace().next()
            {
                plan.local.insert(name.to_lowercase());
            }
        }
        for statement in split_statements(sql) {
            for (i, token) in statement.iter().enumerate() {
                let Token::Word(function) = token else {
                    continue;
                };
                if statement.get(i + 1) != Some(&Token::Punct('(')) {
                    continue;
                }
                let arguments = Cursor::new(&statement[i + 1..]).group().unwrap_or_default();
                let positional: Vec<String> = arguments
                    .iter()
                    .filter_map(|a| match a.as_slice() {
                        [Token::Str(s)] => Some(s.to_lowercase()),
                        _ => None,
                    })
                    .collect();
                let named = |key: &str| {
                    arguments.iter().find_map(|a| match a.as_slice() {
                        [
                            Token::Word(k),
                            Token::Punct('='),
                            Token::Punct('>'),
                            Token::Str(v),
                        ] if k == key => Some(v.to_lowercase()),
                        _ => None,
                    })
                };
                match function.as_str() {
                    "create_distributed_table" => {
                        let [table, column, ..] = positional.as_slice() else {
                            plan.problems.push(format!(
                                "distribute.sql: create_distributed_table without a table and a \
                                 column ({} arguments)",
                                arguments.len()
                            ));
                            continue;
                        };
                        plan.order.push(table.clone());
                        plan.distributed.insert(
                            table.clone(),
                            Distribution {
                                column: column.clone(),
                                colocate_with: named("colocate_with")
                                    .or_else(|| positional.get(2).cloned()),
                            },
                        );
                    }
                    "create_reference_table" => {
                        plan.reference.extend(positional.first().cloned());
                    }
                    "citus_add_local_table_to_metadata" => {
                        plan.local.extend(positional.first().cloned());
                    }
                    _ => {}
                }
            }
        }
        plan
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A keyword or identifier, lowercased unless it was double-quoted.
    Word(String),
    /// A string literal's contents.
    Str(String),
    Punct(char),
}

/// The statements of a SQL file, as tokens; comments dropped, `;` inside quotes, comments and
/// dollar-quoted bodies not taken for a statement's end.
fn split_statements(sql: &str) -> Vec<Vec<Token>> {
    let chars: Vec<char> = sql.chars().collect();
    let mut statements = Vec::new();
    let mut current = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        let next = chars.get(i + 1).copied();
        if ch == '-' && next == Some('-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            // Block comments nest in PostgreSQL.
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '\'' || ch == '"' {
            let mut text = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == ch && chars.get(i + 1) == Some(&ch) {
                    text.push(ch);
                    i += 2;
                } else if chars[i] == ch {
                    i += 1;
                    break;
                } else {
                    text.push(chars[i]);
                    i += 1;
                }
            }
            current.push(if ch == '\'' {
                Token::Str(text)
            } else {
                Token::Word(text)
            });
        } else if ch == '$' && dollar_tag(&chars, i).is_some() {
            let tag = dollar_tag(&chars, i).unwrap_or_default();
            i += tag.len();
            let start = i;
            while i < chars.len() && !chars[i..].starts_with(&tag) {
                i += 1;
            }
            current.push(Token::Str(chars[start..i].iter().collect()));
            i = (i + tag.len()).min(chars.len());
        } else if ch == ';' {
            if !current.is_empty() {
                statements.push(std::mem::take(&mut current));
            }
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            current.push(Token::Word(
                chars[start..i].iter().collect::<String>().to_lowercase(),
            ));
        } else {
            if !ch.is_whitespace() {
                current.push(Token::Punct(ch));
            }
            i += 1;
        }
    }
    if !current.is_empty() {
        statements.push(current);
    }
    statements
}

/// `$$` or `$tag$` starting at `i`, if one does.
fn dollar_tag(chars: &[char], i: usize) -> Option<Vec<char>> {
    let mut j = i + 1;
    while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
        j += 1;
    }
    (chars.get(j) == Some(&'$') && !chars.get(i + 1).is_some_and(char::is_ascii_digit))
        .then(|| chars[i..=j].to_vec())
}

struct Cursor<'a> {
    tokens: &'a [Token],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(tokens: &'a [Token]) -> Cursor<'a> {
        Cursor { tokens, at: 0 }
    }

    fn bump(&mut self) -> Option<&'a Token> {
        let token = self.tokens.get(self.at);
        self.at += 1;
        token
    }

    fn peek_is(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word(w)) if w == word)
    }

    fn eat(&mut self, word: &str) -> bool {
        let hit = self.peek_is(word);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn eat_any(&mut self, words: &[&str]) -> bool {
        words.iter().any(|w| self.eat(w))
    }

    /// All of `words` in a row, or nothing consumed.
    fn eat_seq(&mut self, words: &[&str]) -> bool {
        let hit = words.iter().enumerate().all(
            |(k, word)| matches!(self.tokens.get(self.at + k), Some(Token::Word(w)) if w == word),
        );
        if hit {
            self.at += words.len();
        }
        hit
    }

    fn eat_punct(&mut self, p: char) -> bool {
        let hit = self.tokens.get(self.at) == Some(&Token::Punct(p));
        if hit {
            self.at += 1;
        }
        hit
    }

    /// A possibly schema-qualified name; the last part.
    fn name(&mut self) -> Result<String, String> {
        let mut name = match self.bump() {
            Some(Token::Word(w)) => w.clone(),
            other => return Err(format!("expected a name, found {other:?}")),
        };
        while self.eat_punct('.') {
            match self.bump() {
                Some(Token::Word(w)) => name.clone_from(w),
                other => return Err(format!("expected a name after '.', found {other:?}")),
            }
        }
        Ok(name)
    }

    fn name_list(&mut self) -> Result<Vec<String>, String> {
        let mut names = vec![self.name()?];
        while self.eat_punct(',') {
            names.push(self.name()?);
        }
        Ok(names)
    }

    /// A parenthesised group, split at its top-level commas; the cursor must be on its `(`.
    fn group(&mut self) -> Result<Vec<Vec<Token>>, String> {
        if !self.eat_punct('(') {
            return Err(format!(
                "expected '(', found {:?}",
                self.tokens.get(self.at)
            ));
        }
        let mut parts = vec![Vec::new()];
        let mut depth = 0usize;
        while let Some(token) = self.bump() {
            match token {
                Token::Punct('(') => depth += 1,
                Token::Punct(')') if depth == 0 => {
                    parts.retain(|p| !p.is_empty());
                    return Ok(parts);
                }
                Token::Punct(')') => depth -= 1,
                Token::Punct(',') if depth == 0 => {
                    parts.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            parts.last_mut().expect("a part").push(token.clone());
        }
        Err("unclosed '('".to_owned())
    }

    /// The column names of a key or index: every name in its parenthesised list (so an
    /// expression counts the columns it reads).
    fn columns(&mut self) -> Result<Vec<String>, String> {
        let parts = self.group()?;
        Ok(parts
            .iter()
            .flat_map(|part| {
                part.iter().filter_map(|t| match t {
                    Token::Word(w)
                        if !["asc", "desc", "nulls", "first", "last"].contains(&w.as_str()) =>
                    {
                        Some(w.clone())
                    }
                    _ => None,
                })
            })
            .collect())
    }

    /// The rest of the statement, split at its top-level commas.
    fn split_commas(&mut self) -> Vec<Vec<Token>> {
        let mut parts = vec![Vec::new()];
        let mut depth = 0usize;
        while let Some(token) = self.bump() {
            match token {
                Token::Punct('(') => depth += 1,
                Token::Punct(')') => depth = depth.saturating_sub(1),
                Token::Punct(',') if depth == 0 => {
                    parts.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            parts.last_mut().expect("a part").push(token.clone());
        }
        parts
    }
}

mod reader {
    //! The reader itself, on small schemas: each case is migrations, a distribution plan, and
    //! the problems expected (by a fragment of each).

    use super::check;

    const PLAN: &str = "
        SELECT create_reference_table('keys');
        SELECT create_distributed_table('matches', 'match_id');
        SELECT create_distributed_table('events', 'match_id', colocate_with => 'matches');
        -- local: _sqlx_migrations (sqlx's own)
    ";

    const BASE: &str = "
        CREATE TABLE matches (match_id uuid PRIMARY KEY, status text);
        CREATE TABLE events (match_id uuid NOT NULL, seq bigint CHECK (seq >= 1),
            PRIMARY KEY (match_id, seq));
        CREATE TABLE keys (name text NOT NULL, key bytea, PRIMARY KEY (name));
    ";

    fn problems(extra: &str, plan: &str) -> Vec<String> {
        check(
            &[
                ("1_base.sql".to_owned(), BASE.to_owned()),
                ("2_extra.sql".to_owned(), extra.to_owned()),
            ],
            plan,
        )
    }

    fn expect(extra: &str, plan: &str, wanted: &[&str]) {
        let found = problems(extra, plan);
        assert_eq!(
            found.len(),
            wanted.len(),
            "{extra}\nwanted problems with {wanted:?}, found {found:#?}"
        );
        for (problem, fragment) in found.iter().zip(wanted) {
            assert!(problem.contains(fragment), "{problem:?} lacks {fragment:?}");
        }
    }

    #[test]
    fn a_schema_that_matches_its_plan_has_no_problem() {
        expect("", PLAN, &[]);
    }

    #[test]
    fn a_table_keyed_without_match_id_and_unlisted_is_reported() {
        expect(
            "CREATE TABLE audit_log (id bigint PRIMARY KEY, match_id uuid);",
            PLAN,
            &["table audit_log has primary key (id) without match_id"],
        );
    }

    #[test]
    fn a_table_without_any_primary_key_is_reported() {
        expect(
            "CREATE TABLE notes (match_id uuid, body text);",
            PLAN,
            &["table notes has no primary key"],
        );
    }

    #[test]
    fn the_same_table_named_a_reference_or_local_table_passes() {
        let extra = "CREATE TABLE settings (id bigint PRIMARY KEY);";
        expect(
            extra,
            &format!("{PLAN} SELECT create_reference_table('settings');"),
            &[],
        );
        expect(
            extra,
            &format!("{PLAN}\n-- local: settings (coordinator only)"),
            &[],
        );
    }

    #[test]
    fn a_keyed_table_that_the_plan_forgets_is_reported() {
        expect(
            "CREATE TABLE turns (match_id uuid, seat smallint, PRIMARY KEY (match_id, seat));",
            PLAN,
            &["table turns (primary key (match_id, seat)) is not distributed"],
        );
    }

    #[test]
    fn a_primary_key_replaced_by_alter_table_is_followed() {
        expect(
            "ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (seq);",
            PLAN,
            &["table events is distributed by match_id but has primary key (seq)"],
        );
        expect(
            "ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (match_id, seq, kind);",
            PLAN,
            &[],
        );
        expect(
            "ALTER TABLE events DROP CONSTRAINT events_pkey;",
            PLAN,
            &["table events is distributed by match_id but has no primary key"],
        );
    }

    #[test]
    fn dropped_and_renamed_tables_are_followed() {
        expect(
            "CREATE TABLE requests (request_id text PRIMARY KEY); DROP TABLE IF EXISTS requests;",
            PLAN,
            &[],
        );
        expect(
            "ALTER TABLE keys RENAME TO server_keys;",
            PLAN,
            &[
                "table server_keys has primary key (name) without match_id",
                "distribute.sql names keys, which no migration leaves in place",
            ],
        );
    }

    #[test]
    fn unique_keys_of_distributed_tables_must_hold_match_id() {
        expect(
            "CREATE UNIQUE INDEX events_request ON events (match_id, seq) WHERE seq > 1;",
            PLAN,
            &[],
        );
        expect(
            "CREATE UNIQUE INDEX events_seq ON events USING btree (seq);",
            PLAN,
            &["unique index events_seq on distributed table events leaves out match_id"],
        );
        expect(
            "CREATE UNIQUE INDEX events_seq ON events (seq); DROP INDEX events_seq;",
            PLAN,
            &[],
        );
        expect(
            "ALTER TABLE matches ADD COLUMN code text UNIQUE;",
            PLAN,
            &["unique key matches_code_key of distributed table matches (code) leaves out"],
        );
    }

    #[test]
    fn semicolons_in_comments_strings_and_bodies_do_not_split_statements() {
        expect(
            "/* a; /* nested; */ CREATE TABLE x (id int PRIMARY KEY); */
             -- CREATE TABLE y (id int PRIMARY KEY);
             COMMENT ON TABLE events IS 'not; CREATE TABLE z (id int PRIMARY KEY)';
             CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;",
            PLAN,
            &[],
        );
    }

    #[test]
    fn tables_shaped_where_the_reader_cannot_see_are_reported() {
        expect(
            "DO $$ BEGIN EXECUTE 'CREATE TABLE hidden (id int)'; END $$;",
            PLAN,
            &["inside a function or DO block"],
        );
        expect(
            "CREATE TABLE copy AS SELECT * FROM matches;",
            PLAN,
            &["CREATE TABLE copy without a column list"],
        );
    }

    #[test]
    fn the_plan_must_distribute_by_match_id_and_co_locate() {
        expect(
            "",
            "SELECT create_reference_table('keys');
             SELECT create_distributed_table('matches', 'match_id');
             SELECT create_distributed_table('events', 'seq');",
            &[
                "distributes events by seq",
                "does not co-locate events with matches",
            ],
        );
    }
}
