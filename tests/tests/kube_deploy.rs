//! `deploy/kubernetes/` passes a server-side dry-run on the real API server, in file order
//! (the ServiceAccount, the least-privilege ClusterRole and Role with their bindings, the
//! roles ConfigMap with a modules manifest, the Deployment).

use serde_json::Value;
use workspace_tests::kube::Cluster;
use workspace_tests::workspace_root;

#[test]
fn the_deploy_manifests_pass_a_server_side_dry_run() {
    let dir = workspace_root().join("deploy/kubernetes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("deploy/kubernetes")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "the manifests: {files:?}");
    let cluster = Cluster::start();
    let mut kinds = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        let obj: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        kinds.push(obj["kind"].as_str().unwrap_or_default().to_owned());
        cluster.dry_run_create(obj).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    for kind in [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "a {kind} among {kinds:?}");
    }
    // The roles the ConfigMap ships parse as the scheduler reads them.
    let cm: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("05-configmap.json")).expect("the ConfigMap"),
    )
    .expect("JSON");
    let roles: Value = serde_json::from_str(cm["data"]["roles.json"].as_str().expect("roles.json"))
        .expect("roles JSON");
    assert!(roles.as_object().is_some_and(|r| !r.is_empty()));
    let modules: Value =
        serde_json::from_str(cm["data"]["modules.json"].as_str().expect("modules.json"))
            .expect("a manifest");
    assert!(modules["libraries"].as_array().is_some_and(|l| !l.is_empty()));
}
