//! Rewriting deprecated keys in a `toml_edit` document: a renamed key keeps its value, its
//! comments and its place among its siblings; a removed key leaves a comment line saying what
//! replaced it. Everything else keeps its bytes, so `switchboard config migrate` shows a diff
//! of only what changed, and the loader's line numbers stay those of the file.

use toml_edit::{DocumentMut, Item, Key, RawString, Table, TableLike};

use super::{Change, Deprecation};

/// A deprecated key whose replacement is set as well, so which value wins would be a guess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The deprecated key, where the problem is reported.
    pub key: &'static str,
    /// What to do about it.
    pub message: String,
}

/// Rewrites every entry of `table` that `doc` uses; returns those entries in table order, or
/// every conflict found (the document is then half rewritten: drop it).
pub fn apply(
    doc: &mut DocumentMut,
    table: &'static [Deprecation],
) -> Result<Vec<&'static Deprecation>, Vec<Conflict>> {
    let mut applied = Vec::new();
    let mut conflicts = Vec::new();
    for deprecation in table {
        let (parent, leaf) = split(deprecation.key);
        let present = table_at(doc.as_table(), &parent).is_some_and(|t| t.contains_key(leaf));
        if !present {
            continue;
        }
        let done = match deprecation.change {
            Change::Renamed(new) => rename(doc, deprecation, new),
            Change::Removed(by) => {
                remove(doc, deprecation, by);
                Ok(())
            }
        };
        match done {
            Ok(()) => applied.push(deprecation),
            Err(conflict) => conflicts.push(conflict),
        }
    }
    if conflicts.is_empty() {
        Ok(applied)
    } else {
        Err(conflicts)
    }
}

/// `a.b.c` as (`[a, b]`, `c`).
fn split(key: &str) -> (Vec<&str>, &str) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let leaf = parts.pop().unwrap_or_default();
    (parts, leaf)
}

fn table_at<'a>(root: &'a Table, path: &[&str]) -> Option<&'a dyn TableLike> {
    let mut table: &dyn TableLike = root;
    for part in path {
        table = table.get(part)?.as_table_like()?;
    }
    Some(table)
}

fn table_at_mut<'a>(root: &'a mut Table, path: &[&str]) -> Option<&'a mut dyn TableLike> {
    let mut table: &mut dyn TableLike = root;
    for part in path {
        table = table.get_mut(part)?.as_table_like_mut()?;
    }
    Some(table)
}

/// `old` with its name replaced by `name`: the comments above it and its spacing stay.
fn renamed(old: &Key, name: &str) -> Key {
    Key::new(name)
        .with_leaf_decor(old.leaf_decor().clone())
        .with_dotted_decor(old.dotted_decor().clone())
}

fn rename(doc: &mut DocumentMut, d: &'static Deprecation, new: &str) -> Result<(), Conflict> {
    let (old_parent, old_leaf) = split(d.key);
    let (new_parent, new_leaf) = split(new);
    if table_at(doc.as_table(), &new_parent).is_some_and(|t| t.contains_key(new_leaf)) {
        return Err(Conflict {
            key: d.key,
            message: format!(
                "was renamed to `{new}`, which is set as well; keep one and delete the other"
            ),
        });
    }
    if !can_hold(doc.as_table(), &new_parent) {
        return Err(Conflict {
            key: d.key,
            message: format!("was renamed to `{new}`, but a part of that path is not a table"),
        });
    }
    let from = table_at_mut(doc.as_table_mut(), &old_parent).expect("checked present");
    if old_parent == new_parent {
        rename_in_place(from, old_leaf, new_leaf);
        return Ok(());
    }
    let (key, item) = from
        .get_key_value(old_leaf)
        .map(|(k, i)| (k.clone(), i.clone()))
        .expect("checked present");
    from.remove(old_leaf);
    let mut to: &mut dyn TableLike = doc.as_table_mut();
    for (i, part) in new_parent.iter().enumerate() {
        if !to.contains_key(part) {
            // Only the table that holds the key gets a header of its own.
            let mut made = Table::new();
            made.set_implicit(i + 1 < new_parent.len());
            to.insert(part, Item::Table(made));
        }
        to = to
            .get_mut(part)
            .and_then(Item::as_table_like_mut)
            .expect("checked by can_hold");
    }
    to.entry_format(&renamed(&key, new_leaf)).or_insert(item);
    Ok(())
}

/// Whether every existing part of `path` is a table (missing parts are made).
fn can_hold(root: &Table, path: &[&str]) -> bool {
    let mut table: &dyn TableLike = root;
    for part in path {
        match table.get(part) {
            None => return true,
            Some(item) => match item.as_table_like() {
                Some(inner) => table = inner,
                None => return false,
            },
        }
    }
    true
}

/// Renames `old` to `new` within one table, every entry keeping its order and formatting
/// (a table appends what it inserts, so all entries are taken out and put back in order).
fn rename_in_place(table: &mut dyn TableLike, old: &str, new: &str) {
    let names: Vec<String> = table.iter().map(|(name, _)| name.to_owned()).collect();
    let entries: Vec<(Key, Item)> = names
        .iter()
        .filter_map(|name| table.get_key_value(name))
        .map(|(key, item)| (key.clone(), item.clone()))
        .collect();
    table.clear();
    for (key, item) in entries {
        let key = if key.get() == old {
            renamed(&key, new)
        } else {
            key
        };
        table.entry_format(&key).or_insert(item);
    }
}

fn text(raw: Option<&RawString>) -> &str {
    raw.and_then(RawString::as_str).unwrap_or_default()
}

/// Removes the key, leaving in its place its comments and one line saying what replaced it.
fn remove(doc: &mut DocumentMut, d: &'static Deprecation, by: &str) {
    let (parent_path, leaf) = split(d.key);
    let in_header_table = plain_tables(doc.as_table(), &parent_path);
    let parent = table_at_mut(doc.as_table_mut(), &parent_path).expect("checked present");
    // The comments above it stay; inside an inline table that prefix is only spacing.
    let above = match in_header_table {
        true => text(parent.key(leaf).and_then(|k| k.leaf_decor().prefix())).to_owned(),
        false => String::new(),
    };
    let note = format!(
        "{above}# {leaf}: removed (ignored since {}); {by} replaced it\n",
        d.since
    );
    let next = next_value(parent, leaf);
    parent.remove(leaf);
    // Comments cannot sit inside an inline table, and a dotted key's line starts with its
    // first part, not its own name: there the note goes after the enclosing table.
    if in_header_table && let Some(mut key) = next.and_then(|name| parent.key_mut(&name)) {
        let decor = key.leaf_decor_mut();
        let below = text(decor.prefix()).to_owned();
        decor.set_prefix(format!("{note}{below}"));
        return;
    }
    let after = header_position(doc.as_table(), &parent_path);
    match next_header(doc.as_table_mut(), after) {
        Some(table) => {
            let decor = table.decor_mut();
            let below = text(decor.prefix()).to_owned();
            decor.set_prefix(format!("{note}{below}"));
        }
        None => {
            let trailing = text(Some(doc.trailing())).to_owned();
            doc.set_trailing(format!("{note}{trailing}"));
        }
    }
}

/// Whether every table along `path` is a `[header]` table (not inline, not dotted).
fn plain_tables(root: &Table, path: &[&str]) -> bool {
    let mut table = root;
    for part in path {
        match table.get(part) {
            Some(Item::Table(inner)) if !inner.is_dotted() => table = inner,
            _ => return false,
        }
    }
    true
}

/// The name of the plain value written right after `name` in `table`, if any.
fn next_value(table: &dyn TableLike, name: &str) -> Option<String> {
    table
        .iter()
        .skip_while(|(n, _)| *n != name)
        .skip(1)
        .find(|(_, item)| item.is_value())
        .map(|(n, _)| n.to_owned())
}

/// The document position of the last `[header]` table along `path` (0: the root).
fn header_position(root: &Table, path: &[&str]) -> usize {
    let mut table = root;
    let mut position = root.position().unwrap_or(0);
    for part in path {
        match table.get(part) {
            Some(Item::Table(inner)) => {
                if !inner.is_dotted() && !inner.is_implicit() {
                    position = inner.position().unwrap_or(position);
                }
                table = inner;
            }
            _ => break,
        }
    }
    position
}

/// The first `[header]` table written after document position `after`.
fn next_header(root: &mut Table, after: usize) -> Option<&mut Table> {
    let mut positions = Vec::new();
    headers(root, &mut positions);
    let wanted = positions.into_iter().filter(|p| *p > after).min()?;
    header_at(root, wanted)
}

/// Positions of every table below `table` that is written with a header.
fn headers(table: &Table, out: &mut Vec<usize>) {
    for (_, item) in table.iter() {
        let tables: Vec<&Table> = match item {
            Item::Table(inner) => vec![inner],
            Item::ArrayOfTables(array) => array.iter().collect(),
            _ => continue,
        };
        for inner in tables {
            if !inner.is_dotted() && !inner.is_implicit() {
                out.extend(inner.position());
            }
            headers(inner, out);
        }
    }
}

fn header_at(table: &mut Table, position: usize) -> Option<&mut Table> {
    for (_, item) in table.iter_mut() {
        let tables: Vec<&mut Table> = match item {
            Item::Table(inner) => vec![inner],
            Item::ArrayOfTables(array) => array.iter_mut().collect(),
            _ => continue,
        };
        for inner in tables {
            if !inner.is_dotted() && !inner.is_implicit() && inner.position() == Some(position) {
                return Some(inner);
            }
            if let Some(found) = header_at(inner, position) {
                return Some(found);
            }
        }
    }
    None
}
