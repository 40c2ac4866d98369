import Foundation
import Testing
import TocsinTesting
@testable import TocsinMQTTBackend

@Suite("FleetStore")
struct FleetStoreTests {
    @Test("an id acts once, also after the store is reopened (a daemon restart)")
    func idempotentAcrossReopen() throws {
        let dir = TemporaryDirectory(prefix: "tocsin-fleetstore")
        let path = dir.path + "/mqtt-fleet.sqlite"
        let now = Int64(Date().timeIntervalSince1970)
        do {
            let store = try FleetStore(path: path)
            #expect(store.insert("acknowledged/wake/5/1", kind: "acknowledged", at: now))
            #expect(!store.insert("acknowledged/wake/5/1", kind: "acknowledged", at: now))
            #expect(store.insert("acknowledged/wake/6/1", kind: "acknowledged", at: now), "a new due is a new id")
            store.recordDelivered(key: "wake", occurrence: 2, due: now * 1_000_000)
        }
        let reopened = try FleetStore(path: path)
        #expect(!reopened.insert("acknowledged/wake/5/1", kind: "acknowledged", at: now))
        #expect(reopened.contains("acknowledged/wake/6/1"))
        #expect(!reopened.contains("snoozed/wake/6/1"))
        let last = try #require(reopened.lastDelivered(key: "wake"))
        #expect(last.occurrence == 2 && last.due == now * 1_000_000)
        #expect(reopened.lastDelivered(key: "other") == nil)
    }

    @Test("each fleet key's shared state and latest change survive a reopen; a later record replaces it")
    func fleetKeysAcrossReopen() throws {
        let dir = TemporaryDirectory(prefix: "tocsin-fleetstore")
        let path = dir.path + "/mqtt-fleet.sqlite"
        let t = Int64(Date().timeIntervalSince1970) * 1_000_000
        do {
            let store = try FleetStore(path: path)
            store.recordFleet(key: "tea", shared: true, changed: t + 10)
            store.recordFleet(key: "oven", shared: true, changed: t + 11)
            store.recordFleet(key: "oven", shared: false, changed: t + 12)
        }
        let keys = try FleetStore(path: path).fleetKeys()
        #expect(keys.count == 2)
        #expect(keys["tea"]?.shared == true && keys["tea"]?.changed == t + 10)
        #expect(keys["oven"]?.shared == false && keys["oven"]?.changed == t + 12)
    }

    @Test("the file is readable by its owner only, like the state store")
    func mode() throws {
        let dir = TemporaryDirectory(prefix: "tocsin-fleetstore")
        let path = dir.path + "/mqtt-fleet.sqlite"
        _ = try FleetStore(path: path)
        let attrs = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
    }

    @Test("a directory that does not exist is a clear error, not a crash")
    func unopenable() {
        let path = "/nonexistent/dir/mqtt.sqlite"
        let error = #expect(throws: FleetStore.OpenError.self) { try FleetStore(path: path) }
        let text = error?.description ?? ""
        #expect(text == "cannot create \(path): No such file or directory", "\(text)")
        #expect(text.components(separatedBy: path).count == 2, "the path once: \(text)")
    }

    @Test("ids older than 30 days are dropped when the store opens; recent ones stay")
    func pruned() throws {
        let dir = TemporaryDirectory(prefix: "tocsin-fleetstore")
        let path = dir.path + "/mqtt-fleet.sqlite"
        let now = Int64(Date().timeIntervalSince1970)
        do {
            let store = try FleetStore(path: path)
            #expect(store.insert("acknowledged/old/1/1", kind: "acknowledged", at: now - FleetStore.keepSeenSeconds - 60))
            #expect(store.insert("acknowledged/recent/1/1", kind: "acknowledged", at: now - 86_400))
        }
        let reopened = try FleetStore(path: path)
        #expect(!reopened.contains("acknowledged/old/1/1"))
        #expect(reopened.contains("acknowledged/recent/1/1"))
    }

    /// Regression: the occurrences delivered and the fleet keys were never forgotten, one row per
    /// key ever used, and all fleet keys are read at start.
    @Test("delivered occurrences and unshared fleet keys older than 30 days go too, at open and once a day while running; shared keys stay")
    func prunesEveryTable() throws {
        let dir = TemporaryDirectory(prefix: "tocsin-fleetstore")
        let path = dir.path + "/mqtt-fleet.sqlite"
        let now = Int64(Date().timeIntervalSince1970)
        let old = (now - FleetStore.keepSeenSeconds - 60) * 1_000_000, recent = (now - 86_400) * 1_000_000
        do {
            let store = try FleetStore(path: path)
            store.recordDelivered(key: "old", occurrence: 1, due: old)
            store.recordDelivered(key: "recent", occurrence: 1, due: recent)
            store.recordFleet(key: "gone", shared: false, changed: old)
            store.recordFleet(key: "kept", shared: true, changed: old)
            store.recordFleet(key: "lately", shared: false, changed: recent)
        }
        let reopened = try FleetStore(path: path)
        #expect(reopened.lastDelivered(key: "old") == nil)
        #expect(reopened.lastDelivered(key: "recent")?.due == recent)
        #expect(reopened.fleetKeys().keys.sorted() == ["kept", "lately"])

        // A daemon that runs on: the next write more than a day after the last pruning prunes.
        #expect(reopened.insert("acknowledged/a/1/1", kind: "acknowledged", at: now + 86_399))
        #expect(reopened.lastDelivered(key: "recent") != nil, "pruned again within the day")
        #expect(reopened.insert("acknowledged/b/1/1", kind: "acknowledged", at: now + 29 * 86_400 + 60))
        #expect(reopened.lastDelivered(key: "recent") == nil)
        #expect(reopened.fleetKeys().keys.sorted() == ["kept"])
        #expect(reopened.contains("acknowledged/a/1/1"), "an id is kept for 30 days from when it was seen")
    }

    @Test("the outbox keeps answers in order until removed, across a reopen")
    func outbox() throws {
        let dir = TemporaryDirectory(prefix: "tocsin-fleetstore")
        let path = dir.path + "/mqtt-fleet.sqlite"
        do {
            let store = try FleetStore(path: path)
            store.enqueue(id: "acknowledged/a/1/1", topic: "tocsin/acknowledged", payload: [1, 2, 3], at: 10)
            store.enqueue(id: "snoozed/b/1/1", topic: "tocsin/snoozed", payload: [], at: 11)
            store.enqueue(id: "acknowledged/c/1/1", topic: "tocsin/acknowledged", payload: [4], at: 12)
            store.removeFromOutbox(id: "snoozed/b/1/1")
        }
        let owed = try FleetStore(path: path).outbox()
        #expect(owed.map(\.id) == ["acknowledged/a/1/1", "acknowledged/c/1/1"])
        #expect(owed.map(\.payload) == [[1, 2, 3], [4]])
        #expect(owed.first?.topic == "tocsin/acknowledged")
    }

    @Test("the last snooze number is found by exact prefix, even for keys with LIKE wildcards")
    func lastSnooze() throws {
        let dir = TemporaryDirectory(prefix: "tocsin-fleetstore")
        let store = try FleetStore(path: dir.path + "/mqtt-fleet.sqlite")
        let now = Int64(Date().timeIntervalSince1970)
        #expect(store.lastSnooze(prefix: "snoozed/a%b/5/1/") == 0)
        _ = store.insert("snoozed/a%b/5/1/1", kind: "snoozed", at: now)
        _ = store.insert("snoozed/a%b/5/1/3", kind: "snoozed", at: now)
        _ = store.insert("snoozed/axb/5/1/7", kind: "snoozed", at: now)
        _ = store.insert("snoozed/a%b/6/1/9", kind: "snoozed", at: now)
        #expect(store.lastSnooze(prefix: "snoozed/a%b/5/1/") == 3)
    }
}
