//! The object cache's own tests: eviction, leases of ended builds, clearing.

use super::*;
use std::collections::BTreeSet;

fn write_object(layer: &Layer, key: &str, bytes: usize, age_s: u64) {
    let path = layer.object(key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, vec![0u8; bytes]).unwrap();
    let when = SystemTime::now() - std::time::Duration::from_secs(age_s);
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn open(root: &Path) -> ObjectCache<'static> {
    // A test's cache says what it must on standard error, for the life of the test.
    let directives: &'static Directives = Box::leak(Box::new(Directives::new(false)));
    ObjectCache::open(root.to_path_buf(), None, Hooks::default(), directives)
}

#[test]
fn eviction_removes_the_least_recently_used_and_spares_held_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cache = open(&tmp.path().join("hip"));
    let layer = cache.shared.clone();
    write_object(&layer, "oldest", 100, 300);
    write_object(&layer, "older", 100, 200);
    write_object(&layer, "old", 100, 100);
    write_object(&layer, "new", 100, 0);
    // This build holds the oldest: it stays, the next oldest go.
    cache.hold("oldest");
    let evicted = cache.evict(250).unwrap();
    assert_eq!(
        evicted,
        Evicted {
            objects: 2,
            bytes: 200
        }
    );
    let left: BTreeSet<String> = lease::objects(&tmp.path().join("hip/objects"))
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(left, ["new", "oldest"].map(String::from).into());
}

#[test]
fn a_lease_of_an_ended_build_protects_nothing_and_is_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("hip");
    {
        let mut ended = open(&root);
        write_object(&ended.shared.clone(), "a", 100, 100);
        ended.hold("a");
    }
    // A lease left by a build killed before it could remove it: not locked by anyone.
    std::fs::write(root.join("leases/999999-0"), "a\n").unwrap();
    let cache = open(&root);
    assert_eq!(cache.evict(0).unwrap().objects, 1);
    assert!(!root.join("leases/999999-0").exists());
}

#[test]
fn clear_empties_objects_records_and_history_but_spares_what_a_running_build_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("hip");
    let mut running = open(&root);
    let layer = running.shared.clone();
    write_object(&layer, "held", 100, 0);
    write_object(&layer, "free", 300, 0);
    running.hold("held");
    for dir in ["units", "sources"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(layer.record_path("u1"), "{}").unwrap();
    std::fs::write(layer.record_path("u2"), "{}").unwrap();
    std::fs::write(layer.last_path("lib", "a.hip"), "{}").unwrap();
    // A record a running build is writing: a temporary name, left alone.
    let writing = root.join(format!("units/.u3.json.tmp-{}-0", std::process::id()));
    std::fs::write(&writing, "{").unwrap();
    let build = r#"{"at": "t", "library": "l", "out_dir": "o", "hits": 1, "misses": 2}"#;
    std::fs::write(layer.builds(), format!("[{build}, {build}]")).unwrap();
    let cleared = open(&root).clear().unwrap();
    assert_eq!(
        cleared,
        Cleared {
            objects: 1,
            bytes: 300,
            records: 2,
            builds: 2
        }
    );
    assert!(layer.has("held") && !layer.has("free"));
    assert!(!layer.builds().exists());
    assert!(writing.exists());
    let left = |dir: &str| std::fs::read_dir(root.join(dir)).unwrap().count();
    assert_eq!((left("units"), left("sources")), (1, 0));
}
