// `mneme-server --version` says the commit it was built from (MNEME_COMMIT; see the included file).
include!("../../scripts/build_stamp.rs");

fn main() {
    stamp_commit();
}
