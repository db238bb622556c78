//! The timeline in Chrome's trace event format (chrome://tracing, Perfetto): a complete event
//! (`ph: X`) per job on its slot's thread, the slots named, and counters for the jobs running and
//! the memory they hold.

use serde_json::{Value, json};

use super::{Timeline, load};

/// Microseconds, as the format counts.
fn micros(seconds: f64) -> f64 {
    (seconds * 1e6).round()
}

/// The trace of `timeline`, as JSON text.
pub(super) fn chrome_trace(timeline: &Timeline) -> String {
    let mut events: Vec<Value> = Vec::new();
    events.push(json!({
        "ph": "M", "pid": 1, "name": "process_name",
        "args": { "name": format!("qola: {}", timeline.library) }
    }));
    let slots = timeline
        .spans
        .iter()
        .map(|s| s.slot)
        .max()
        .map_or(0, |m| m + 1);
    for slot in 0..slots {
        events.push(json!({
            "ph": "M", "pid": 1, "tid": slot, "name": "thread_name",
            "args": { "name": format!("slot {}", slot + 1) }
        }));
    }
    for (index, span) in timeline.spans.iter().enumerate() {
        let unit = span.unit.map(|u| &timeline.units[u]);
        let source = unit.map_or("(shared)", |u| u.source.as_str());
        let name = source.rsplit('/').next().unwrap_or(source);
        events.push(json!({
            "ph": "X", "pid": 1, "tid": span.slot,
            "name": format!("{name}: {}", span.label),
            "cat": unit.map_or("shared", |u| u.ended.words()),
            "ts": micros(span.start), "dur": micros(span.seconds),
            "args": {
                "source": source,
                "holds": unit.map(|u| &u.holds),
                "job": span.label,
                "cpu_seconds": span.cpu,
                "peak_bytes": span.peak,
                "reason": unit.map(|u| u.reason.as_str()),
                "critical_path": timeline.critical.contains(&index),
                "failed": span.failed,
            }
        }));
    }
    for (at, jobs, bytes) in load(&timeline.spans) {
        events.push(json!({
            "ph": "C", "pid": 1, "name": "jobs running", "ts": micros(at),
            "args": { "jobs": jobs, "cap": timeline.jobs }
        }));
        // A counter's values are numbers only (Perfetto's importer drops a null as an error):
        // the memory the cap divided is there when there was one.
        let mut memory = json!({ "held": bytes >> 20 });
        if let Some(available) = timeline.memory {
            memory["available"] = json!(available >> 20);
        }
        events.push(json!({
            "ph": "C", "pid": 1, "name": "memory held (MiB)", "ts": micros(at), "args": memory
        }));
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "summary": timeline.summary, "library": timeline.library },
    })
    .to_string()
}
