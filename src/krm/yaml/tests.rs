//! Tests of the YAML layer: round trips, quoting, limits, and comments
//! (where they attach, how they are copied, that they read back stably).

use std::fmt::Write as _;

use super::*;

fn round(text: &str) -> String {
    emit_documents(&parse_documents(text).unwrap())
}

/// Found by fuzzing (fuzz/regressions/yaml/): an empty first document
/// was written as a blank text, which reads back as no document.
/// Found by fuzzing (fuzz/regressions/yaml/): a top-level block scalar
/// holding a line `---` was written at column 0, where it ends the
/// document; an empty flow key was written `~`, which reads back as "~";
/// a flow scalar ending in ` -` was written plain, and the parser takes
/// that `-` before `]` for another scalar.
#[test]
fn block_scalar_documents_and_empty_flow_keys_read_back_the_same() {
    for text in [
        "\n>-\n ---\n",
        "|\n  a\n  ...\n  b\n",
        "a: [: b]\n",
        "a: [x, {: [g]}]\n",
        "- [(   -      ]\n",
        "- [( \n-\n ? -\n ]\n",
    ] {
        let docs = parse_documents(text).unwrap();
        let emitted = emit_documents(&docs);
        let back = parse_documents(&emitted).unwrap();
        assert_eq!(back.len(), docs.len(), "{text:?} -> {emitted:?}");
        for (a, b) in docs.iter().zip(&back) {
            assert_eq!(a.to_json(), b.to_json(), "{text:?} -> {emitted:?}");
        }
        assert_eq!(emit_documents(&back), emitted, "{text:?}");
    }
}

#[test]
fn an_empty_first_document_reads_back_as_one() {
    for text in ["---\n", "&a\n", "--- ''\n", "---\n---\na: 1\n"] {
        let docs = parse_documents(text).unwrap();
        let emitted = emit_documents(&docs);
        let back = parse_documents(&emitted).unwrap();
        assert_eq!(back.len(), docs.len(), "{text:?} -> {emitted:?}");
        assert_eq!(emit_documents(&back), emitted, "{text:?}");
    }
}

#[test]
fn scalars_keep_their_text_and_quoting() {
    let text = "a: 0640\nb: \"on\"\nc: '1.10'\nd: no\ne: 0x1F\nf: 123456789012345678901234567890\ng: !!str 12\n";
    assert_eq!(round(text), text);
}

#[test]
fn new_strings_that_look_like_other_types_are_quoted() {
    for v in ["on", "no", "y", "1.10", "0640", "0x1F", "12:30", "1e3", "", "null", "~", ".inf"] {
        let mut m = Map::new();
        m.insert("k", Node::string(v));
        let text = emit_documents(&[Node::Map(m)]);
        let back = parse_document(&text).unwrap();
        assert_eq!(
            back.get("k").unwrap().to_json(),
            serde_json::Value::String(v.into()),
            "{v}: {text}"
        );
        assert!(text.contains('"'), "{v} not quoted: {text}");
    }
}

#[test]
fn nulls_and_flow_collections_keep_their_form() {
    let text = "a:\nb: [x, 'y', \"z\", {k: v}]\nc: {k: [1, 2]}\nd:\n- [1]\n- {}\n";
    assert_eq!(round(text), text);
}

#[test]
fn quotes_are_re_escaped() {
    let text = "a: 'it''s'\nb: \"tab\\there \\\"q\\\"\"\n";
    assert_eq!(round(text), text);
}

#[test]
fn literal_blocks_survive() {
    let text = "script: |\n  echo 1\n  echo 2\nkeep: |+\n  x\n\nstrip: |-\n  y\nitems:\n- a\n- b: 1\n  c: []\n";
    assert_eq!(round(text), text);
}

#[test]
fn errors_name_the_line() {
    let e = parse_documents("a: 1\nb: [\n").unwrap_err();
    assert!(e.line >= 2, "{e}");
    let e = parse_documents("a: 1\na: 2\n").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn deep_nesting_is_refused_not_overflowing_the_stack() {
    let text = "- ".repeat(100_000) + "x\n";
    let e = parse_documents(&text).unwrap_err();
    assert!(e.message.contains("nesting"), "{e}");
}

/// Found by fuzzing: a percent-encoded tag was written decoded (`!%3Ee`
/// as `!>e`), which does not parse back.
#[test]
fn tags_are_written_percent_encoded_where_they_must_be() {
    for (text, written) in [
        ("!%3ee\n", "!%3Ee \n"),
        ("a: !%7Cx y\n", "a: !%7Cx y\n"),
        ("a: !local%21 y\n", "a: !local%21 y\n"),
        ("a: !!str 1\n", "a: !!str 1\n"),
        // A two-byte run reads as U+C7BE (see tag_encode), written back as it came.
        ("a: !7%c7%bee y\n", "a: !7%C7%BEe y\n"),
        ("a: !<tag:example.com,2000:a%3Eb> y\n", "a: !<tag:example.com,2000:a%3Eb> y\n"),
    ] {
        let docs = parse_documents(text).unwrap();
        let emitted = emit_documents(&docs);
        assert_eq!(emitted, written, "{text:?}");
        let back = parse_documents(&emitted).unwrap();
        assert_eq!(back[0].to_json(), docs[0].to_json(), "{text:?}");
        assert_eq!(emit_documents(&back), emitted, "stable: {text:?}");
    }
}

#[test]
fn alias_bombs_are_refused() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        let _ = writeln!(
            text,
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]"
        );
    }
    assert!(parse_documents(&text).is_err());
}

mod comment_tests {
    use super::super::*;

    fn round(text: &str) -> String {
        emit_documents(&parse_documents(text).unwrap())
    }

    /// Emitting what was emitted gives the same text (what the fuzz target checks).
    fn stable(text: &str) -> String {
        let once = round(text);
        let docs = parse_documents(text).unwrap();
        let back = parse_documents(&once).unwrap_or_else(|e| panic!("{text:?} -> {once:?}: {e}"));
        assert_eq!(back.len(), docs.len(), "{text:?} -> {once:?}");
        for (a, b) in docs.iter().zip(&back) {
            assert_eq!(a.to_json(), b.to_json(), "{text:?} -> {once:?}");
        }
        assert_eq!(round(&once), once, "not stable: {text:?}");
        once
    }

    #[test]
    fn kpt_style_comments_read_back_byte_identical() {
        for text in [
            "# file head\n# second line\napiVersion: v1\nkind: ConfigMap # kind line\nmetadata:\n  name: a\n  # above labels\n  labels:\n    x: y # x line\n    # above z\n    z: w\n    # foot of labels\ndata:\n  k: v\n  list:\n  # above item\n  - a # item line\n  - name: b\n    # inside item\n    v: 1\n  # foot of list\n  s: | # header\n    body\n    # not a comment\n  q: \"a # b\"\n  p: a#b\n  flow: [a, b] # flow line\n# foot of doc\n---\n# doc 2 head\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n# end\n",
            "a: 1\n# between documents\n---\nb: 2\n",
            "a: # after key\n  b: 1\n",
            "a: # after key\n- 1\n- 2 # two\n",
            "spec:\n  containers:\n  # the web server\n  - name: web # its name\n    image: nginx # pinned\n    ports:\n    - 80 # http\n    # foot of ports\n  # foot of containers\n",
            "a: '1' # quoted\nb: \"x\" # double\nc: {k: v} # flow map\nd: [] # empty\ne: # nothing\n",
            "- # head of nothing?\n  a: 1\n",
            "# only a head\nplain\n",
            "x # line of a root scalar\n",
            "[a, b] # root flow\n",
            // kyaml's form of a document's head comment in a ResourceList's items.
            "items:\n- # doc head\n  # second line\n  apiVersion: v1\n  kind: A\n- kind: B\n",
            // And of a document's foot comment, before the next item's head.
            "items:\n- a: 1\n  # foot of a\n- # head of b\n  b: 2\n",
        ] {
            let once = stable(text);
            if !text.starts_with("- #") {
                assert_eq!(once, text);
            }
        }
    }

    #[test]
    fn comments_attach_to_their_nodes() {
        let doc = parse_document(
            "# head\napiVersion: v1 # line\nspec:\n  # above a\n  a: 1\n  # foot of spec\n",
        )
        .unwrap();
        let map = doc.as_map().unwrap();
        let (api, value) = &map.entries()[0];
        assert_eq!(api.comments().head, ["# head"]);
        assert_eq!(value.comments().line.as_deref(), Some("# line"));
        let spec = doc.get("spec").unwrap();
        assert_eq!(spec.as_map().unwrap().entries()[0].0.comments().head, ["# above a"]);
        assert_eq!(spec.comments().foot, ["# foot of spec"]);
        let list = parse_document("items:\n# above\n- # doc head\n  a: 1\n").unwrap();
        let item = &list.get("items").unwrap().as_seq().unwrap()[0];
        assert_eq!(item.comments().head, ["# above"]);
        assert_eq!(item.as_map().unwrap().entries()[0].0.comments().head, ["# doc head"]);
    }

    #[test]
    fn copied_comments_follow_their_field_and_fill_only_what_is_empty() {
        let from = parse_document(
            "# head\nkind: A # kind\nspec:\n  # above n\n  n: 1 # one\n  gone: x # gone\n  items:\n  - name: b # b\n  - name: a # a\n  - s # scalar\n",
        )
        .unwrap();
        // Rebuilt from its value (no comments), fields reordered, one deleted,
        // one added, list items reordered, one comment of its own.
        let mut to = parse_document(
            "spec:\n  items:\n  - name: a\n  - name: b # mine\n  - t\n  added: 1\n  n: 2\nkind: A\n",
        )
        .unwrap();
        copy_comments(&from, &mut to);
        assert_eq!(
            emit_documents(&[to]),
            "spec:\n  items:\n  - name: a # a\n  - name: b # mine\n  - t\n  added: 1\n  # above n\n  n: 2 # one\n# head\nkind: A # kind\n"
        );
    }

    #[test]
    fn copied_comments_find_their_field_in_large_maps_and_named_lists_too() {
        // 40 keys and 40 named items (past the scan limit: indexed), each
        // with its own comment; the output has them reversed, and one name
        // twice in the input (the first one's comment wins, as in a scan).
        let doc = |order: &[usize], commented: bool| {
            let note = |what: &str, k: usize| {
                if commented { format!(" # {what} {k}") } else { String::new() }
            };
            let mut text = String::from("spec:\n");
            for &k in order {
                text.push_str(&format!("  k{k}: {k}{}\n", note("key", k)));
            }
            text.push_str("list:\n");
            for &k in order {
                text.push_str(&format!("- name: n{k}{}\n", note("item", k)));
            }
            text
        };
        let forward: Vec<usize> = (0..40).collect();
        let reversed: Vec<usize> = (0..40).rev().collect();
        let from = parse_document(&(doc(&forward, true) + "- name: n7 # second n7\n")).unwrap();
        let mut to = parse_document(&doc(&reversed, false)).unwrap();
        copy_comments(&from, &mut to);
        let want = doc(&reversed, true);
        assert_eq!(emit_documents(&[to]), want);
    }

    #[test]
    fn comments_do_not_make_nodes_unequal() {
        let a = parse_document("a: 1 # one\n").unwrap();
        let b = parse_document("a: 1\n").unwrap();
        assert_eq!(a, b);
        assert_ne!(emit_documents(&[a]), emit_documents(&[b]));
    }

    #[test]
    fn hashes_inside_scalars_are_not_comments() {
        let text = "a: \"x # y\"\nb: 'x # y'\nc: x#y\nd: |\n  # z\n  w\ne: >-\n  # folded\n";
        let docs = parse_documents(text).unwrap();
        let json = docs[0].to_json();
        assert_eq!(json["a"], "x # y");
        assert_eq!(json["b"], "x # y");
        assert_eq!(json["c"], "x#y");
        assert_eq!(json["d"], "# z\nw\n");
        assert_eq!(json["e"], "# folded");
        let text = emit_documents(&docs);
        assert!(!text.contains(" # y #"), "{text}");
        let back = parse_documents(&text).unwrap();
        assert_eq!(back[0].to_json(), json);
    }

    /// Found by fuzzing (fuzz/regressions/yaml/empty-document-*): an empty
    /// document's line comment (`&a # c`) was written ` # c` on a line of
    /// its own, which reads back as a whole-line comment, and its head and
    /// foot comments were written differently (a blank line after a head),
    /// so the text changed when written again.
    #[test]
    fn an_empty_documents_comments_are_written_as_whole_lines() {
        for (text, written) in [
            ("&a # c\n", "---\n# c\n"),
            ("&a\n# c\n", "---\n# c\n"),
            ("---\n# c\n", "---\n# c\n"),
            ("# h\n--- # l\n# f\n", "---\n# h\n# l\n# f\n"),
            ("a: 1\n--- &x # c\n", "a: 1\n---\n# c\n"),
            ("---\n", "---\n\n"),
        ] {
            assert_eq!(stable(text), written, "{text:?}");
        }
    }

    /// Found by fuzzing (fuzz/regressions/yaml/spaced-flow-*): a flow
    /// collection written with a space after its bracket (`[ a ]`) was
    /// taken for a block one (the start event's span runs on over the
    /// space), so it was written in block style and a comment after it
    /// (`- [ ] # c`) became a foot comment, written on a line of its own.
    #[test]
    fn spaced_flow_collections_stay_flow_and_keep_their_line_comment() {
        for (text, written) in [
            ("- [ ] # c\n", "- [] # c\n"),
            ("a: [ x, y ] # c\n", "a: [x, y] # c\n"),
            ("a: &x { k: v }\n", "a: {k: v}\n"),
            ("a: !!seq\n  [ 1 ]\n", "a: [1]\n"),
            ("a: &x\n- 1\n", "a:\n- 1\n"),
            // An anchor or a tag ends at the bracket (`&a[]`).
            ("- &a[] # c\n", "- [] # c\n"),
            ("&a[!{}] # c\n", "[{}] # c\n"),
            ("a: !<!x> [ 1 ]\n", "a: [1]\n"),
        ] {
            assert_eq!(stable(text), written, "{text:?}");
        }
    }

    /// Found by fuzzing: saphyr-parser counts a reserved directive's
    /// characters in bytes, so after `%é` its markers ran one character
    /// ahead; the line comment after `[]` was then taken for a foot comment
    /// (and a flow collection after such a directive could be read as block).
    #[test]
    fn a_non_ascii_directive_moves_no_comment_and_no_flow_collection() {
        for (text, written) in [
            ("%\u{e9}\n---\n- [] # c\n", "- [] # c\n"),
            ("%\u{1f600} x\u{e9}\n---\n- [] #\n", "- [] #\n"),
            ("%\u{e9}\n---\na: [1] # c\nb: {k: v}\n", "a: [1] # c\nb: {k: v}\n"),
            ("%\u{e9}\n---\n\u{e9}: [x]\n", "\u{e9}: [x]\n"),
        ] {
            assert_eq!(stable(text), written, "{text:?}");
        }
    }

    #[test]
    fn odd_comment_places_are_stable() {
        for text in [
            "---\n# c\n",
            "--- # c\na: 1\n",
            "# c\n---\na: 1\n",
            "a: 1\n...\n# c\n---\nb: 2\n",
            "a: [x, # inside\n  y]\n",
            "a: {k: # inside\n  v} # after\n",
            "a:\n  # before a value\n  b\n",
            "a: |+\n  x\n\n# c\nb: 1\n",
            "- - a # x\n  # c\n- b\n",
            "? a # k\n: b # v\n",
            "a: &x 1 # anchored\nb: *x # alias\n",
            "a: !!str # tagged empty\n",
            "#c\n-\n",
            "a:\n    b: 1\n  # under-indented\n",
            "\u{feff}# bom\na: 1\n",
            "a: 1\r\n# crlf\r\n",
            "- a\n# c\n",
            "#\n",
            "---\n---\n# c\n",
            // Found by the property below: a nested sequence starts at its own `-`.
            "   - - - \n# \n",
        ] {
            stable(text);
        }
    }
}

mod comment_props {
    use proptest::prelude::*;

    use super::super::*;

    /// The fuzz target's check (fuzz/src/targets.rs `yaml`), on text full of comments.
    fn check(text: &str) {
        let Ok(docs) = parse_documents(text) else { return };
        let emitted = emit_documents(&docs);
        let back = parse_documents(&emitted)
            .unwrap_or_else(|e| panic!("{text:?} -> {emitted:?} does not parse back: {e}"));
        assert_eq!(back.len(), docs.len(), "{text:?} -> {emitted:?}");
        for (a, b) in docs.iter().zip(&back) {
            assert_eq!(a.to_json(), b.to_json(), "{text:?} -> {emitted:?}");
        }
        assert_eq!(emit_documents(&back), emitted, "not stable: {text:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn text_with_comments_round_trips_stably(
            text in "([ ]{0,4}([a-c]{1,2}: ?|- |# [a-c]{0,2}|'[a#]'|\"[a#]\"|\\||>|\\[|\\]|\\{|\\}|, |#|x #y|---|\\.\\.\\.){0,6}\n){0,8}"
        ) {
            check(&text);
        }
    }
}
