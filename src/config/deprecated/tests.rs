use super::*;

/// Entries used only here, for the shapes the real table has none of yet.
static TEST_TABLE: &[Deprecation] = &[
    Deprecation {
        key: "web.gone",
        change: Change::Removed("the token link"),
        since: "0.2.0",
        removed_in: "0.3.0",
    },
    Deprecation {
        key: "old.moved",
        change: Change::Renamed("new.place.moved"),
        since: "0.2.0",
        removed_in: "0.3.0",
    },
];

fn migrated(text: &str, table: &'static [Deprecation]) -> String {
    migrate_with(text, "t.toml", table).expect("migrates").text
}

const OLD: &str = "# My gateway.\n[streaming]\nchunk_min_chars = 40\n\
                   # Fewer edits: the group is busy.\nprogress_min_interval_ms = 1500   # ms\n\
                   first_send_hold_ms = 0\n\n[agent]\nhistory_limit = 10\n";

#[test]
fn a_renamed_key_keeps_its_value_comments_and_place_byte_for_byte() {
    let expected = "# My gateway.\n[streaming]\nchunk_min_chars = 40\n\
                    # Fewer edits: the group is busy.\nedit_min_interval_ms = 1500   # ms\n\
                    first_send_hold_ms = 0\n\n[agent]\nhistory_limit = 10\n";
    let done = migrate(OLD, "t.toml").unwrap();
    assert_eq!(done.text, expected);
    assert_eq!(done.applied, vec![&DEPRECATIONS[0]]);
    let again = migrate(&done.text, "t.toml").unwrap();
    assert_eq!(again.text, expected, "a current file is left as it is");
    assert!(again.applied.is_empty());
}

#[test]
fn a_key_written_dotted_or_inline_is_renamed_where_it_stands() {
    assert_eq!(
        migrated(
            "streaming.progress_min_interval_ms = 5\nx = 1\n",
            DEPRECATIONS
        ),
        "streaming.edit_min_interval_ms = 5\nx = 1\n"
    );
    assert_eq!(
        migrated(
            "streaming = { chunk_min_chars = 1, progress_min_interval_ms = 5 }\n",
            DEPRECATIONS
        ),
        "streaming = { chunk_min_chars = 1, edit_min_interval_ms = 5 }\n"
    );
}

#[test]
fn a_removed_key_leaves_its_comments_and_a_line_saying_what_replaced_it() {
    let note = "# gone: removed (ignored since 0.2.0); the token link replaced it\n";
    let before_a_sibling = "[web]\n# Old switch.\ngone = true\nkept = 1\n";
    assert_eq!(
        migrated(before_a_sibling, TEST_TABLE),
        format!("[web]\n# Old switch.\n{note}kept = 1\n")
    );
    let last_in_its_table =
        "[web]\nkept = 1\n# Old switch.\ngone = true\n\n# Next.\n[other]\nx = 1\n";
    assert_eq!(
        migrated(last_in_its_table, TEST_TABLE),
        format!("[web]\nkept = 1\n# Old switch.\n{note}\n# Next.\n[other]\nx = 1\n")
    );
    let last_in_the_file = "[other]\nx = 1\n[web]\ngone = true\n";
    assert_eq!(
        migrated(last_in_the_file, TEST_TABLE),
        format!("[other]\nx = 1\n[web]\n{note}")
    );
    let inline = "web = { gone = true, kept = 1 }\n[other]\nx = 1\n";
    assert_eq!(
        migrated(inline, TEST_TABLE),
        format!("web = {{ kept = 1 }}\n{note}[other]\nx = 1\n")
    );
}

#[test]
fn a_key_renamed_into_another_table_moves_there_with_its_comments() {
    let text = "[old]\n# Why.\nmoved = 5\nstay = 1\n\n[new.place]\nother = 2\n";
    assert_eq!(
        migrated(text, TEST_TABLE),
        "[old]\nstay = 1\n\n[new.place]\nother = 2\n# Why.\nmoved = 5\n"
    );
    let nowhere_yet = "[old]\nmoved = 5\n";
    assert_eq!(
        migrated(nowhere_yet, TEST_TABLE),
        "[old]\n\n[new.place]\nmoved = 5\n"
    );
}

#[test]
fn a_file_setting_both_names_is_refused_at_the_old_key() {
    let text = "[streaming]\nedit_min_interval_ms = 1\nprogress_min_interval_ms = 2\n";
    let err = migrate(text, "t.toml").unwrap_err().to_string();
    assert_eq!(
        err,
        "t.toml:3:1: key `streaming.progress_min_interval_ms`: was renamed to \
         `streaming.edit_min_interval_ms`, which is set as well; keep one and delete the other"
    );
    let load = crate::config::parse(text, "t.toml", &[]).unwrap_err();
    assert_eq!(load.to_string(), err, "the loader refuses it the same way");
}

#[test]
fn the_loader_reads_the_old_name_names_its_line_and_still_refuses_typos() {
    let config = crate::config::parse(OLD, "t.toml", &[]).unwrap();
    assert_eq!(config.streaming.edit_min_interval_ms, 1500);
    let [used] = config.deprecated.as_slice() else {
        panic!("{:?}", config.deprecated)
    };
    assert_eq!(
        used.to_string(),
        "t.toml:5:1: `streaming.progress_min_interval_ms` is deprecated: it is now \
         `streaming.edit_min_interval_ms` (0.3.0 will refuse the old name; \
         `switchboard config migrate` renames it)"
    );
    let typo = OLD.replace("first_send_hold_ms", "first_send_hold_mss");
    let err = crate::config::parse(&typo, "t.toml", &[]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("t.toml:6:1: key `streaming.first_send_hold_mss`: unknown field"),
        "the line after a renamed key is still its own: {err}"
    );
    let current = crate::config::parse(&migrate(OLD, "t.toml").unwrap().text, "t.toml", &[]);
    let current = current.unwrap();
    assert!(current.deprecated.is_empty());
    assert_eq!(
        format!("{:?}", current.streaming),
        format!("{:?}", config.streaming)
    );
}

#[test]
fn an_old_environment_variable_sets_the_new_key_and_names_the_new_variable() {
    let var = "SWITCHBOARD__STREAMING__PROGRESS_MIN_INTERVAL_MS";
    let overrides = [(var.to_owned(), "70".to_owned())];
    let text = "[streaming]\nedit_min_interval_ms = 10\n";
    let config = crate::config::parse(text, "t.toml", &overrides).unwrap();
    assert_eq!(
        config.streaming.edit_min_interval_ms, 70,
        "the variable wins"
    );
    let [used] = config.deprecated.as_slice() else {
        panic!("{:?}", config.deprecated)
    };
    assert_eq!(
        used.to_string(),
        format!(
            "environment variable {var}: `streaming.progress_min_interval_ms` is deprecated: \
             it is now `streaming.edit_min_interval_ms`; set \
             SWITCHBOARD__STREAMING__EDIT_MIN_INTERVAL_MS instead (0.3.0 will refuse the old \
             name)"
        )
    );
}

#[test]
fn the_example_config_uses_no_deprecated_key() {
    let example = include_str!("../../../config/switchboard.example.toml");
    let done = migrate(example, "example.toml").unwrap();
    assert!(done.applied.is_empty(), "{:?}", done.applied);
    assert_eq!(done.text, example);
}

fn version(text: &str) -> (u64, u64, u64) {
    let parts: Vec<u64> = text
        .split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().expect("a number"))
        .collect();
    (parts[0], parts[1], parts[2])
}

#[test]
fn every_deprecation_lasts_one_minor_version_that_this_crate_has_not_passed() {
    let crate_version = version(env!("CARGO_PKG_VERSION"));
    for d in DEPRECATIONS {
        let (since, removed) = (version(d.since), version(d.removed_in));
        assert_eq!(
            (removed.0, removed.1, removed.2),
            (since.0, since.1 + 1, 0),
            "{}: removed in the minor version after it was deprecated",
            d.key
        );
        assert!(
            crate_version < removed,
            "{} is due for removal in {}: delete its entry (and its note in README)",
            d.key,
            d.removed_in
        );
        assert_eq!(find(d.key), Some(d), "{}: one entry per key", d.key);
        if let Change::Renamed(new) = d.change {
            assert!(
                find(new).is_none(),
                "{}: renamed to a deprecated key",
                d.key
            );
        }
    }
}

#[test]
fn the_loopback_key_is_ignored_with_a_warning_and_migrate_leaves_a_note_in_its_place() {
    let text = "[admin]\nenabled = true\n# Behind nginx.\nloopback_without_token = false\n\n[cluster]\nlisten = true\n";
    let config = crate::config::parse(text, "t.toml", &[]).unwrap();
    let [used] = config.deprecated.as_slice() else {
        panic!("{:?}", config.deprecated)
    };
    assert_eq!(
        used.to_string(),
        "t.toml:4:1: `admin.loopback_without_token` no longer does anything and is ignored: \
         the dashboard's token link (`switchboard admin-token` prints it) replaced it (0.3.0 \
         will refuse it; `switchboard config migrate` removes it)"
    );
    assert_eq!(
        migrate(text, "t.toml").unwrap().text,
        "[admin]\nenabled = true\n# Behind nginx.\n# loopback_without_token: removed (ignored \
         since 0.2.0); the dashboard's token link (`switchboard admin-token` prints it) \
         replaced it\n\n[cluster]\nlisten = true\n"
    );
}
