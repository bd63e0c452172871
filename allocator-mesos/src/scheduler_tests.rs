//! The scheduler API's JSON as pymesos 0.3.15 sends it (calls) and reads it (events).

use serde_json::json;

use super::*;

fn call(json: serde_json::Value) -> Call {
    let c = Call::parse(&json.to_string()).unwrap();
    c.validate().unwrap();
    c
}

#[test]
fn a_pymesos_subscribe_gives_the_framework_info_roles_and_capabilities() {
    let c = call(json!({
        "type": "SUBSCRIBE",
        "subscribe": {"framework_info": {
            "user": "", "name": "demo", "hostname": "laptop",
            "roles": ["a", "b"], "failover_timeout": 100,
            "capabilities": [{"type": "MULTI_ROLE"}, {"type": "GPU_RESOURCES"}, {"type": "SOMETHING_NEW"}],
            "offer_filters": {"a": {"min_allocatable_resources": {"quantities": [{"quantities": {"cpus": {"value": 1}}}]}}}
        }}
    }));
    assert_eq!(c.kind, CallType::Subscribe);
    let info = &c.subscribe.as_ref().unwrap().framework_info;
    assert_eq!(info.name, "demo");
    assert_eq!(info.effective_roles(), vec!["a".to_string(), "b".to_string()]);
    assert_eq!(info.failover_timeout(), 100.0);
    assert!(info.has_capability(FrameworkCapabilityType::GpuResources));
    assert!(info.has_capability(FrameworkCapabilityType::Unknown), "unknown names are tolerated");
    let min = &info.offer_filters["a"].min_allocatable_resources.as_ref().unwrap().quantities[0];
    assert_eq!(min.quantities["cpus"].value, 1.0);
}

#[test]
fn a_framework_without_multi_role_is_in_its_legacy_role_or_star() {
    let info: FrameworkInfo =
        serde_json::from_value(json!({"user": "u", "name": "n", "role": "r"})).unwrap();
    assert_eq!(info.effective_roles(), vec!["r".to_string()]);
    let info: FrameworkInfo =
        serde_json::from_value(json!({"user": "u", "name": "n", "roles": ["x"]})).unwrap();
    assert_eq!(info.effective_roles(), vec!["*".to_string()]);
}

#[test]
fn a_resubscribe_carries_the_framework_id_in_both_places() {
    let c = call(json!({
        "type": "SUBSCRIBE", "framework_id": {"value": "f-1"},
        "subscribe": {"framework_info": {"user": "", "name": "n", "id": {"value": "f-1"}}}
    }));
    assert_eq!(c.framework_id, Some(FrameworkId::new("f-1")));
    let bad = Call::parse(
        &json!({"type": "SUBSCRIBE", "framework_id": {"value": "f-1"},
                "subscribe": {"framework_info": {"user": "", "name": "n", "id": {"value": "f-2"}}}})
        .to_string(),
    )
    .unwrap();
    assert!(bad.validate().unwrap_err().contains("differs"));
}

#[test]
fn a_launch_accept_gives_tasks_with_resources_labels_and_filters() {
    let c = call(json!({
        "type": "ACCEPT", "framework_id": {"value": "f-1"},
        "accept": {
            "offer_ids": [{"value": "o-1"}],
            "operations": [{"type": "LAUNCH", "launch": {"task_infos": [{
                "name": "t", "task_id": {"value": "t-1"}, "agent_id": {"value": "a-1"},
                "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.5}}],
                "command": {"value": "sleep 3"},
                "labels": {"labels": [{"key": "duration", "value": "7.5"}]},
                "container": {"type": "MESOS"}
            }]}}],
            "filters": {"refuse_seconds": 1}
        }
    }));
    let accept = c.accept.unwrap();
    assert_eq!(accept.offer_ids, vec![OfferId::new("o-1")]);
    assert_eq!(Filters::refuse_seconds(accept.filters.as_ref()), 1.0);
    let task = &accept.operations[0].launch.as_ref().unwrap().task_infos[0];
    assert_eq!(task.agent_id, AgentId::new("a-1"));
    assert_eq!(task.duration(), Some(7.5), "the label wins over the command");
    assert_eq!(task.rest["container"], json!({"type": "MESOS"}), "unknown parts are kept");
    let back = serde_json::to_value(task).unwrap();
    assert_eq!(back["container"], json!({"type": "MESOS"}));
}

#[test]
fn a_task_duration_comes_from_sleep_n_or_is_unbounded() {
    let task = |command: &str| TaskInfo {
        command: Some(CommandInfo { value: Some(command.into()), ..CommandInfo::default() }),
        ..TaskInfo::default()
    };
    assert_eq!(task("sleep 12").duration(), Some(12.0));
    assert_eq!(task("  sleep 0.5 ").duration(), Some(0.5));
    assert_eq!(task("sleep 1; echo").duration(), None);
    assert_eq!(task("sleep -1").duration(), None);
    assert_eq!(task("echo hi").duration(), None);
    assert_eq!(TaskInfo::default().duration(), None);
}

#[test]
fn a_launch_group_reserve_unreserve_create_and_destroy_parse() {
    let r = json!([{"name": "disk", "type": "SCALAR", "scalar": {"value": 1}}]);
    let c = call(json!({
        "type": "ACCEPT", "framework_id": {"value": "f"},
        "accept": {"offer_ids": [{"value": "o"}], "operations": [
            {"type": "LAUNCH_GROUP", "launch_group": {
                "executor": {"type": "DEFAULT", "executor_id": {"value": "e"}, "resources": r},
                "task_group": {"tasks": [{"name": "t", "task_id": {"value": "t"}, "agent_id": {"value": "a"}}]}}},
            {"type": "RESERVE", "reserve": {"resources": r}},
            {"type": "UNRESERVE", "unreserve": {"resources": r}},
            {"type": "CREATE", "create": {"volumes": r}},
            {"type": "DESTROY", "destroy": {"volumes": r}}
        ]}
    }));
    let kinds: Vec<OperationType> = c.accept.unwrap().operations.iter().map(|o| o.kind).collect();
    use OperationType as O;
    assert_eq!(kinds, vec![O::LaunchGroup, O::Reserve, O::Unreserve, O::Create, O::Destroy]);
}

#[test]
fn an_operation_without_its_field_is_refused_as_mesos_words_it() {
    let c = Call::parse(
        &json!({"type": "ACCEPT", "framework_id": {"value": "f"},
                "accept": {"offer_ids": [], "operations": [{"type": "LAUNCH"}]}})
        .to_string(),
    )
    .unwrap();
    assert_eq!(c.validate().unwrap_err(), "Expecting 'launch' to be present");
}

#[test]
fn decline_revive_suppress_kill_acknowledge_reconcile_and_teardown_parse_as_pymesos_sends_them() {
    let f = json!({"value": "f-1"});
    let d = call(
        json!({"type": "DECLINE", "framework_id": f, "decline": {"offer_ids": [{"value": "o"}], "filters": {"refuse_seconds": 60}}}),
    );
    assert_eq!(d.decline.unwrap().filters.unwrap().refuse_seconds, Some(60.0));
    assert!(call(json!({"type": "REVIVE", "framework_id": f})).revive.is_none());
    let s = call(json!({"type": "SUPPRESS", "framework_id": f, "suppress": {"roles": ["a"]}}));
    assert_eq!(s.suppress.unwrap().roles, vec!["a".to_string()]);
    let k = call(json!({"type": "KILL", "framework_id": f, "kill": {"task_id": {"value": "t"}}}));
    assert_eq!(k.kill.unwrap().task_id, TaskId::new("t"));
    let a = call(json!({"type": "ACKNOWLEDGE", "framework_id": f, "acknowledge": {
        "agent_id": {"value": "a"}, "task_id": {"value": "t"}, "uuid": "AAECAw=="}}));
    assert_eq!(a.acknowledge.unwrap().uuid, Bytes(vec![0, 1, 2, 3]));
    let r = call(json!({"type": "RECONCILE", "framework_id": f, "reconcile": {"tasks": []}}));
    assert!(r.reconcile.unwrap().tasks.is_empty());
    let r = call(
        json!({"type": "RECONCILE", "framework_id": f, "reconcile": {"tasks": [{"task_id": {"value": "t"}}]}}),
    );
    assert_eq!(r.reconcile.unwrap().tasks[0].task_id, TaskId::new("t"));
    assert_eq!(call(json!({"type": "TEARDOWN", "framework_id": f})).kind, CallType::Teardown);
}

#[test]
fn inverse_offer_replies_message_request_and_update_framework_parse() {
    let f = json!({"value": "f-1"});
    let a = call(json!({"type": "ACCEPT_INVERSE_OFFERS", "framework_id": f,
                        "accept_inverse_offers": {"inverse_offer_ids": [{"value": "i"}]}}));
    assert_eq!(a.accept_inverse_offers.unwrap().inverse_offer_ids, vec![OfferId::new("i")]);
    let d = call(json!({"type": "DECLINE_INVERSE_OFFERS", "framework_id": f,
                        "decline_inverse_offers": {"inverse_offer_ids": [{"value": "i"}], "filters": {}}}));
    assert!(d.decline_inverse_offers.unwrap().filters.is_some());
    let m = call(json!({"type": "MESSAGE", "framework_id": f, "message": {
        "agent_id": {"value": "a"}, "executor_id": {"value": "e"}, "data": "aGk="}}));
    assert_eq!(m.message.unwrap().data, Bytes(b"hi".to_vec()));
    let r = call(json!({"type": "REQUEST", "framework_id": f, "request": {"requests": [
        {"agent_id": {"value": "a"}, "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}}]}]}}));
    assert_eq!(r.request.unwrap().requests[0].resources[0].name, "cpus");
    let u = call(json!({"type": "UPDATE_FRAMEWORK", "framework_id": f, "update_framework": {
        "framework_info": {"user": "", "name": "n", "id": f, "roles": ["x"]}}}));
    assert_eq!(u.update_framework.unwrap().framework_info.roles, vec!["x".to_string()]);
}

#[test]
fn a_call_without_framework_id_or_its_field_is_refused_as_mesos_words_it() {
    let parsed = |v: serde_json::Value| Call::parse(&v.to_string()).unwrap();
    assert_eq!(
        parsed(json!({"type": "DECLINE", "decline": {"offer_ids": []}})).validate().unwrap_err(),
        "Expecting 'framework_id' to be present"
    );
    assert_eq!(
        parsed(json!({"type": "KILL", "framework_id": {"value": "f"}})).validate().unwrap_err(),
        "Expecting 'kill' to be present"
    );
    assert_eq!(
        parsed(json!({"type": "SUBSCRIBE"})).validate().unwrap_err(),
        "Expecting 'subscribe' to be present"
    );
    assert_eq!(parsed(json!({})).validate().unwrap_err(), "Expecting 'type' to be present");
}

#[test]
fn malformed_json_and_unknown_call_types_do_not_parse() {
    assert!(Call::parse("{").unwrap_err().starts_with("Failed to parse body into Call"));
    assert!(Call::parse(r#"{"type": "FLY"}"#).unwrap_err().contains("FLY"));
    assert!(Call::parse(r#"{"type": "ACKNOWLEDGE", "acknowledge": {"agent_id": {"value": "a"}, "task_id": {"value": "t"}, "uuid": "!!"}}"#).is_err());
}

#[test]
fn every_call_type_has_its_mesos_name() {
    use CallType as T;
    let all = [
        (T::Subscribe, "SUBSCRIBE"),
        (T::Teardown, "TEARDOWN"),
        (T::Accept, "ACCEPT"),
        (T::Decline, "DECLINE"),
        (T::AcceptInverseOffers, "ACCEPT_INVERSE_OFFERS"),
        (T::DeclineInverseOffers, "DECLINE_INVERSE_OFFERS"),
        (T::Revive, "REVIVE"),
        (T::Kill, "KILL"),
        (T::Shutdown, "SHUTDOWN"),
        (T::Acknowledge, "ACKNOWLEDGE"),
        (T::AcknowledgeOperationStatus, "ACKNOWLEDGE_OPERATION_STATUS"),
        (T::Reconcile, "RECONCILE"),
        (T::ReconcileOperations, "RECONCILE_OPERATIONS"),
        (T::Message, "MESSAGE"),
        (T::Request, "REQUEST"),
        (T::Suppress, "SUPPRESS"),
        (T::UpdateFramework, "UPDATE_FRAMEWORK"),
    ];
    for (kind, name) in all {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(name));
        assert_eq!(serde_json::from_value::<CallType>(json!(name)).unwrap(), kind);
    }
}

#[test]
fn a_subscribed_event_is_what_pymesos_reads() {
    let e = Event::subscribed(Subscribed {
        framework_id: FrameworkId::new("f-1"),
        heartbeat_interval_seconds: Some(15.0),
        master_info: None,
    });
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"type": "SUBSCRIBED", "subscribed": {"framework_id": {"value": "f-1"}, "heartbeat_interval_seconds": 15.0}})
    );
}

#[test]
fn an_offers_event_carries_ids_agent_hostname_resources_and_role() {
    let r: allocator_api::resources::Resources = "cpus:2;mem:1024".parse().unwrap();
    let offer = Offer {
        id: OfferId::new("o-1"),
        framework_id: FrameworkId::new("f-1"),
        agent_id: AgentId::new("a-1"),
        hostname: "a-1".into(),
        resources: super::super::to_mesos(&r, Some("r1"), super::super::ResourceFormat::Refined),
        attributes: vec![Attribute::text("rack", "r7")],
        executor_ids: Vec::new(),
        unavailability: None,
        allocation_info: Some(AllocationInfo { role: Some("r1".into()) }),
    };
    let v = serde_json::to_value(Event::offers(vec![offer])).unwrap();
    assert_eq!(v["type"], "OFFERS");
    let o = &v["offers"]["offers"][0];
    assert_eq!(
        (o["id"]["value"].as_str(), o["agent_id"]["value"].as_str()),
        (Some("o-1"), Some("a-1"))
    );
    assert_eq!(o["allocation_info"], json!({"role": "r1"}));
    assert_eq!(
        o["attributes"][0],
        json!({"name": "rack", "type": "TEXT", "text": {"value": "r7"}})
    );
    let cpus = o["resources"].as_array().unwrap().iter().find(|x| x["name"] == "cpus").unwrap();
    assert_eq!(cpus["scalar"]["value"], 2.0);
}

#[test]
fn an_update_event_carries_state_reason_source_and_base64_uuid() {
    let mut s = TaskStatus::new(TaskId::new("t-1"), TaskState::TaskError);
    s.reason = Some(TaskStatusReason::ReasonInvalidOffers);
    s.source = Some(TaskStatusSource::SourceMaster);
    s.agent_id = Some(AgentId::new("a-1"));
    s.uuid = Some(Bytes(vec![0xff; 16]));
    s.message = Some("Task uses more resources than offered".into());
    let v = serde_json::to_value(Event::update(s.clone())).unwrap();
    assert_eq!(v["type"], "UPDATE");
    let st = &v["update"]["status"];
    assert_eq!(st["state"], "TASK_ERROR");
    assert_eq!(st["reason"], "REASON_INVALID_OFFERS");
    assert_eq!(st["source"], "SOURCE_MASTER");
    assert_eq!(st["uuid"], "/////////////////////w==");
    let back: Event = serde_json::from_value(v).unwrap();
    assert_eq!(back.update.unwrap().status, s);
}

#[test]
fn terminal_task_states_are_those_mesos_names_terminal() {
    use TaskState as S;
    for s in [
        S::TaskFinished,
        S::TaskFailed,
        S::TaskKilled,
        S::TaskError,
        S::TaskLost,
        S::TaskDropped,
        S::TaskGone,
        S::TaskGoneByOperator,
    ] {
        assert!(s.is_terminal(), "{s:?}");
    }
    for s in [
        S::TaskStaging,
        S::TaskStarting,
        S::TaskRunning,
        S::TaskKilling,
        S::TaskUnreachable,
        S::TaskUnknown,
    ] {
        assert!(!s.is_terminal(), "{s:?}");
    }
}

#[test]
fn rescind_inverse_offer_error_failure_and_heartbeat_events_have_mesos_fields() {
    let v = |e: Event| serde_json::to_value(e).unwrap();
    assert_eq!(
        v(Event::rescind(OfferId::new("o"))),
        json!({"type": "RESCIND", "rescind": {"offer_id": {"value": "o"}}})
    );
    assert_eq!(
        v(Event::rescind_inverse_offer(OfferId::new("i"))),
        json!({"type": "RESCIND_INVERSE_OFFER", "rescind_inverse_offer": {"inverse_offer_id": {"value": "i"}}})
    );
    assert_eq!(v(Event::error("bye")), json!({"type": "ERROR", "error": {"message": "bye"}}));
    assert_eq!(v(Event::heartbeat()), json!({"type": "HEARTBEAT"}));
    assert_eq!(
        v(Event::failure(Failure { agent_id: Some(AgentId::new("a")), ..Failure::default() })),
        json!({"type": "FAILURE", "failure": {"agent_id": {"value": "a"}}})
    );
    let inverse = InverseOffer {
        id: OfferId::new("i"),
        framework_id: FrameworkId::new("f"),
        agent_id: Some(AgentId::new("a")),
        unavailability: Unavailability {
            start: TimeInfo::from_secs(10.0),
            duration: Some(DurationInfo::from_secs(5.0)),
        },
        resources: Vec::new(),
    };
    assert_eq!(
        v(Event::inverse_offers(vec![inverse])),
        json!({"type": "INVERSE_OFFERS", "inverse_offers": {"inverse_offers": [{
            "id": {"value": "i"}, "framework_id": {"value": "f"}, "agent_id": {"value": "a"},
            "unavailability": {"start": {"nanoseconds": 10_000_000_000i64}, "duration": {"nanoseconds": 5_000_000_000i64}}}]}})
    );
}

#[test]
fn an_event_record_is_recordio_framed_json() {
    let record = Event::heartbeat().to_record();
    assert_eq!(record, b"20\n{\"type\":\"HEARTBEAT\"}".to_vec());
}
