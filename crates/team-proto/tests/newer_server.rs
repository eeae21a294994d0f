//! A newer team server's answers read by this client: a role it adds does not make the `me`
//! answer unreadable, and is acted on as a member's (ARCHITECTURE.md, "Mneme's own files across
//! versions").

use mneme_team_proto::server_wire::{MeResponse, RepoRole};

#[test]
fn a_role_a_newer_server_adds_is_read_and_acted_on_as_a_member() {
    let me: MeResponse = serde_json::from_str(
        r#"{"user": "ada", "repos": [
            {"repo": "acme/a", "team": "acme", "role": "owner", "version": 3, "maxEntries": 100},
            {"repo": "acme/b", "team": "acme", "role": "lead", "version": 0, "maxEntries": 100}
        ]}"#,
    )
    .unwrap();
    assert_eq!(me.repos[0].role, RepoRole::Newer);
    assert_eq!(me.repos[0].role.acting_as(), RepoRole::Member, "least privilege");
    assert_eq!(me.repos[1].role.acting_as(), RepoRole::Lead);
    assert_eq!(RepoRole::Member.acting_as(), RepoRole::Member);
    // This build's server never sends it.
    assert!(serde_json::to_string(&RepoRole::Newer).is_err());
    assert_eq!(serde_json::to_string(&RepoRole::Lead).unwrap(), r#""lead""#);
}
