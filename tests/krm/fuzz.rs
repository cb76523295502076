//! No input makes a function panic: arbitrary bytes and YAML-ish text always
//! give a ResourceList on stdout and exit code 0 or 1.

use crate::fns;
use crate::support;
use cosi_runtime::krm::{ResourceList, run};
use proptest::prelude::*;

fn check(input: &[u8]) {
    for f in fns::all() {
        let out = run(f.as_ref(), input);
        assert!(out.exit_code == 0 || out.exit_code == 1);
        assert!(ResourceList::parse(&out.stdout).is_ok(), "output parses back:\n{}", out.stdout);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..512)) {
        check(&input);
    }

    #[test]
    fn yaml_like_text_never_panics(input in "[a-zA-Z0-9:\\-\\[\\]{}&*!|>'\"%@#, \n]{0,300}") {
        check(input.as_bytes());
    }

    #[test]
    fn mutated_resource_lists_never_panic(cut in 0usize..400, junk in "[:\\-\\[\\]{} \n'\"&*]{0,8}") {
        let base = support::list_of(&[support::KPTFILE, &support::site("lab", "eu"), &support::cluster("a", 3)]);
        let at = cut.min(base.len());
        let text = format!("{}{}{}", &base[..at], junk, &base[at..]);
        check(text.as_bytes());
    }
}
