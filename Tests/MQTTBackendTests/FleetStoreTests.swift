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
        do {
            let store = try FleetStore(path: path)
            #expect(store.insert("acknowledged/wake/5/1", kind: "acknowledged", at: 1))
            #expect(!store.insert("acknowledged/wake/5/1", kind: "acknowledged", at: 2))
            #expect(store.insert("acknowledged/wake/6/1", kind: "acknowledged", at: 3), "a new due is a new id")
            store.recordDelivered(key: "wake", occurrence: 2, due: 6)
        }
        let reopened = try FleetStore(path: path)
        #expect(!reopened.insert("acknowledged/wake/5/1", kind: "acknowledged", at: 4))
        #expect(reopened.contains("acknowledged/wake/6/1"))
        #expect(!reopened.contains("snoozed/wake/6/1"))
        let last = try #require(reopened.lastDelivered(key: "wake"))
        #expect(last.occurrence == 2 && last.due == 6)
        #expect(reopened.lastDelivered(key: "other") == nil)
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
        #expect(throws: FleetStore.OpenError.self) { try FleetStore(path: "/nonexistent/dir/mqtt.sqlite") }
    }
}
