public import TocsinCore
import TocsinConfig
import TocsinTime
import TocsinSystem

extension StoreConformance {
    static func event(_ kind: HistoryEvent.Kind, _ seconds: Int64, _ key: String, backends: [String]? = nil) -> StoreOp {
        .record(HistoryEvent(kind: kind, time: t0 + .seconds(seconds), key: key, backends: backends))
    }

    static let historyCases: [StoreConformanceCase] = [
        StoreConformanceCase("history entries take title and backends from the row, newest first, filtered") { store, f in
            var noBackends = sample("d", title: "Default")
            noBackends.backends = nil
            _ = try await commit(store, [.upsert(StoredNotification(notification: sample("k", title: "Tea"))),
                                         .upsert(StoredNotification(notification: noBackends)),
                                         event(.fired, 1, "k"), event(.acknowledged, 2, "k", backends: ["exec"]),
                                         event(.fired, 3, "d"), event(.cancelled, 4, "gone"),
                                         event(.missed, 5, "k"), .delete(key: "k", keepUserInfo: false), event(.cancelled, 6, "k")])
            let all = try await store.history(HistoryQuery())
            f.equal(all.map(\.time), (1...6).reversed().map { t0 + .seconds(Int64($0)) }, "times, newest first")
            f.equal(all.map(\.title), ["", "Tea", "", "Default", "Tea", "Tea"], "titles (from the row as it was then)")
            f.equal(all.map(\.backends), [[], ["log", "exec"], [], [], ["exec"], ["log", "exec"]], "backends")
            f.equal(try await store.history(HistoryQuery(key: "k")).map(\.kind), [.cancelled, .missed, .acknowledged, .fired], "kinds of key k")
            f.equal(try await store.history(HistoryQuery(since: t0 + .seconds(5))).count, 2, "entries since t0+5 s (inclusive)")
            f.equal(try await store.history(HistoryQuery(limit: 2)).map(\.kind), [.cancelled, .missed], "limit 2")
            f.equal(try await store.history(HistoryQuery(limit: 0)).count, 0, "limit 0")
            f.equal(try await store.history(HistoryQuery(limit: -5)).count, 0, "a negative limit")
            f.equal(try await store.history(HistoryQuery(key: "none")).count, 0, "entries of a key with none")
        },
        StoreConformanceCase("history entries keep every field") { store, f in
            let e = HistoryEvent(kind: .fired, time: t0, key: "k", title: "", backends: ["log"], due: t0 - .seconds(5),
                                 until: t0 + .seconds(300), occurrence: 7, late: true, count: 2)
            _ = try await commit(store, [.upsert(StoredNotification(notification: sample("k"))), .record(e)])
            var expected = e
            expected.title = "Tea"
            f.equal(try await store.history(HistoryQuery()), [expected], "the entry read back")
        },
        StoreConformanceCase("pruning removes at most a batch, by age then beyond the newest kept") { store, f in
            _ = try await commit(store, (1...10).map { event(.fired, Int64($0), "k") })
            _ = try await commit(store, [.pruneHistory(olderThan: t0 + .seconds(6), keep: 100, batch: 3)])
            f.equal(try await store.history(HistoryQuery()).map(\.time).last, t0 + .seconds(4), "oldest left after an age prune of 3")
            _ = try await commit(store, [.pruneHistory(olderThan: t0, keep: 2, batch: 3)])
            f.equal(try await store.history(HistoryQuery()).count, 4, "entries left after a count prune of 3 down toward 2")
            _ = try await commit(store, [.pruneHistory(olderThan: t0, keep: 2, batch: 100)])
            f.equal(try await store.history(HistoryQuery()).map(\.time), [t0 + .seconds(10), t0 + .seconds(9)], "the newest 2 kept")
        },
        StoreConformanceCase("unrecordFired removes only the newest fired entry of that key, occurrence and due") { store, f in
            func fired(_ seconds: Int64, _ key: String, occurrence: UInt32, due: Int64) -> StoreOp {
                .record(HistoryEvent(kind: .fired, time: t0 + .seconds(seconds), key: key, due: t0 + .seconds(due), occurrence: occurrence))
            }
            // An older identical firing (a clock set back), other occurrences, other dues, other
            // keys and other kinds of the same key all stay.
            _ = try await commit(store, [fired(1, "k", occurrence: 1, due: 10), fired(2, "k", occurrence: 2, due: 10),
                                         fired(3, "k", occurrence: 1, due: 20), fired(4, "j", occurrence: 1, due: 10),
                                         .record(HistoryEvent(kind: .interrupted, time: t0 + .seconds(5), key: "k", due: t0 + .seconds(10), occurrence: 1)),
                                         fired(6, "k", occurrence: 1, due: 10)])
            _ = try await commit(store, [.unrecordFired(key: "k", occurrence: 1, due: t0 + .seconds(10)),
                                         .unrecordFired(key: "none", occurrence: 1, due: t0 + .seconds(10))])
            f.equal(try await store.history(HistoryQuery()).map(\.time), (1...5).reversed().map { t0 + .seconds(Int64($0)) },
                    "entries left: all but the newest fired one of k, occurrence 1, due t0+10 s")
        },
    ]

    static let batchCases: [StoreConformanceCase] = [
        StoreConformanceCase("commitEach commits in order and reads each batch's own state") { store, f in
            let one = StoredNotification(notification: sample("k", title: "one"))
            let two = StoredNotification(notification: sample("k", title: "two"))
            var results: [[String: Notification]] = []
            for await r in store.commitEach([(ops: [.upsert(one)], reading: ["k"]), (ops: [], reading: ["k"]),
                                             (ops: [.upsert(two)], reading: ["k"]), (ops: [.delete(key: "k", keepUserInfo: false)], reading: ["k"])]) {
                results.append(try r.get())
            }
            f.equal(results.map { $0["k"]?.title }, ["one", "one", "two", nil], "titles read after each batch")
            var none = 0
            for await _ in store.commitEach([]) { none += 1 }
            f.equal(none, 0, "results of no batches")
        },
        StoreConformanceCase("a closed store fails every call with a StoreError, one per batch") { store, f in
            _ = try await commit(store, [.upsert(StoredNotification(notification: sample("k")))])
            await store.close()
            var codes: [StoreError.Code?] = []
            for await r in store.commitEach([(ops: [.delete(key: "k", keepUserInfo: false)], reading: []),
                                             (ops: [], reading: ["k"])]) {
                if case .failure(let e) = r { codes.append(e.code) } else { codes.append(nil) }
            }
            f.equal(codes, [.failed, .failed], "commitEach results after close")
            do throws(StoreError) {
                _ = try await store.commit([.delete(key: "k", keepUserInfo: false)], reading: [])
                f.expect(false, "commit after close succeeded")
            } catch { f.equal(error.code, .failed, "commit's error after close") }
            do throws(StoreError) {
                _ = try await store.notifications(["k"])
                f.expect(false, "notifications() after close succeeded")
            } catch { f.equal(error.code, .failed, "notifications()' error after close") }
            var loads = 0
            for await chunk in store.load(chunkSize: 10) {
                loads += 1
                if case .success = chunk { f.expect(false, "load after close succeeded") }
            }
            f.equal(loads, 1, "load results after close")
        },
        StoreConformanceCase("quiet state round-trips; held firings come back in id order, as stored") { store, f in
            f.equal(try await store.loadQuiet(), QuietSnapshot(), "quiet state of a new store")
            let override = QuietOverride(on: true, until: t0 + .hours(1))
            _ = try await commit(store, [.quietSwitch(override), .quietActive(true), .hold(held(2, "b")), .hold(held(1, "a")), .hold(held(3, "c"))])
            var s = try await store.loadQuiet()
            f.equal(s.override, override, "override")
            f.equal(s.active, true, "active")
            f.equal(s.held.map(\.id), [1, 2, 3], "held ids")
            f.equal(s.held.first, storedForm(held(1, "a")), "a held firing as the store keeps it")
            _ = try await commit(store, [.hold(held(2, "b2")), .unhold([1, 9]), .quietSwitch(nil), .quietActive(false)])
            s = try await store.loadQuiet()
            f.equal(s.held.map(\.firing.notification.key), ["b2", "c"], "held keys after replacing 2 and releasing 1")
            f.equal(s.override, nil, "override cleared")
            f.equal(s.active, false, "active cleared")
            _ = try await commit(store, [])
            f.equal(try await store.loadQuiet(), s, "quiet state after an empty commit")
        },
        StoreConformanceCase("quiet ops share the batch's transaction with the rows, in order") { store, f in
            let occ = Occurrence(instant: t0, number: 2, offset: .seconds(5))
            let pending = PendingDelivery(occurrence: occ, due: t0, remaining: ["log", "exec"])
            _ = try await commit(store, [.upsert(StoredNotification(notification: sample("k"), last: occ, pending: pending))])
            // A hold and the held backend's confirmation, as the center commits them; a hold
            // released later in the same batch is gone at its end.
            let read = try await commit(store, [.hold(held(1, "k")), .pending(key: "k", PendingDelivery(occurrence: occ, due: t0, remaining: ["exec"])),
                                                .hold(held(2, "x")), .unhold([2]), .quietActive(true)], reading: ["k"])
            f.equal(read["k"]?.title, "Tea", "the row read in the same commit")
            f.equal(try await rows(store)["k"]?.pending?.remaining, ["exec"], "the claim's backends left after the hold")
            let s = try await store.loadQuiet()
            f.equal(s.held.map(\.id), [1], "held ids after holding 1 and 2 and releasing 2")
            f.equal(s.active, true, "active")
        },
    ]

    /// Cases that need the store to run out of space: `fill` makes every later commit that
    /// writes new data fail, as a full disk does.
    public static let faultCases: [StoreFaultCase] = [
        StoreFaultCase("a batch that cannot be committed stores none of its ops, quiet ones included") { store, fill, f in
            let occ = Occurrence(instant: t0, number: 1)
            _ = try await commit(store, [.upsert(StoredNotification(notification: sample("k"), last: occ,
                                                                    pending: PendingDelivery(occurrence: occ, due: t0, remaining: ["log"]))),
                                         .quietSwitch(QuietOverride(on: true, until: nil)), .quietActive(true), .hold(held(1, "a"))])
            let before = try await store.loadQuiet()
            try await fill()
            // Large enough that no store can fit it in space it already has.
            var big = held(2, "big")
            big.firing.notification.body = String(repeating: "z", count: 1 << 20)
            var bigRow = sample("new")
            bigRow.body = String(repeating: "y", count: 1 << 20)
            do throws(StoreError) {
                _ = try await store.commit([.pending(key: "k", nil), .upsert(StoredNotification(notification: bigRow)),
                                            .quietSwitch(nil), .quietActive(false), .unhold([1]), .hold(big)], reading: [])
                f.expect(false, "a commit on a full store succeeded")
            } catch { f.equal(error.code, .full, "the error of a commit on a full store") }
            f.equal(try await store.loadQuiet(), before, "quiet state after the failed batch")
            let loaded = try await rows(store)
            f.equal(loaded.count, 1, "rows after the failed batch")
            f.equal(loaded["k"]?.pending?.remaining, ["log"], "the claim after the failed batch")
        },
    ]

    /// A held firing with fields the quiet table does not keep (its trigger, missed policy, ring).
    static func held(_ id: Int64, _ key: String) -> HeldFiring {
        var n = sample(key, trigger: .every(period: .seconds(60), starting: t0, count: nil, until: nil))
        n.source = .config
        var firing = Firing(notification: n, occurrence: Occurrence(instant: t0, number: 2, offset: .seconds(5)),
                            due: t0 + .seconds(1), fired: t0 + .seconds(2), reason: .late)
        firing.isAlarm = true
        firing.ring = 3
        firing.backends = ["log", "exec"]
        return HeldFiring(id: id, backend: "log", firing: firing)
    }

    /// What a store gives back for `h`: the content a popup shows, the occurrence and the one
    /// backend it was held for; the trigger becomes the due instant.
    public static func storedForm(_ h: HeldFiring) -> HeldFiring {
        let o = h.firing.notification
        let n = Notification(key: o.key, title: o.title, body: o.body, trigger: .at(h.firing.due), urgency: o.urgency,
                             icon: o.icon, category: o.category, sound: o.sound, actions: o.actions, userInfo: o.userInfo)
        var f = Firing(notification: n, occurrence: h.firing.occurrence, due: h.firing.due, fired: h.firing.fired, reason: h.firing.reason)
        f.isAlarm = h.firing.isAlarm
        f.backends = [h.backend]
        return HeldFiring(id: h.id, backend: h.backend, firing: f)
    }
}
