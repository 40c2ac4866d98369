import TocsinModel
import TocsinTime
public import TocsinSystem

/// The durable quiet state, as start-up reads it.
public struct QuietSnapshot: Hashable, Sendable {
    public var override: QuietOverride?
    public var active = false
    public var held: [HeldFiring] = []
    public init(override: QuietOverride? = nil, active: Bool = false, held: [HeldFiring] = []) {
        self.override = override; self.active = active; self.held = held
    }
}

/// The two quiet tables (created in `StateStore.migrate`): `quiet_state` holds the manual switch
/// and whether it was quiet, `quiet_held` one row per held firing with its content, so a held
/// firing survives its notification being cancelled or finished. Enums are stored by name.
/// Written by the batch's own ops (`StoreOp.quietSwitch`, `.quietActive`, `.hold`, `.unhold`),
/// so quiet changes commit and roll back with the rest of a batch.
extension StateStore {
    /// Created with the other tables (`StateStore.migrate`); additive, so older state files gain them.
    static let quietSchema = """
        CREATE TABLE IF NOT EXISTS quiet_state(name TEXT PRIMARY KEY, value INTEGER);
        CREATE TABLE IF NOT EXISTS quiet_held(
          id INTEGER PRIMARY KEY, backend TEXT NOT NULL, key TEXT NOT NULL,
          title TEXT NOT NULL, body TEXT NOT NULL, urgency TEXT NOT NULL, icon TEXT, category TEXT, sound TEXT,
          actions TEXT NOT NULL, user_info TEXT NOT NULL,
          due INTEGER NOT NULL, fired INTEGER NOT NULL, occurrence INTEGER NOT NULL, occurrence_instant INTEGER NOT NULL,
          occurrence_offset INTEGER, reason TEXT NOT NULL, alarm INTEGER NOT NULL
        );
        """

    private func setState(_ name: String, _ value: Int64?) throws(StoreError) {
        let s = try db.prepare("INSERT OR REPLACE INTO quiet_state(name, value) VALUES (?, ?)")
        s.bind(1, name)
        s.bind(2, value)
        try s.run()
    }

    /// `StoreOp.quietSwitch`, inside the batch's transaction (`apply`).
    func saveQuietSwitch(_ o: QuietOverride?) throws(StoreError) {
        // override: 0 none, 1 on, 2 off (a tiny closed set written and read only here).
        try setState("override", o.map { $0.on ? 1 : 2 } ?? 0)
        try setState("override_until", o?.until?.microseconds)
    }

    func saveQuietActive(_ a: Bool) throws(StoreError) { try setState("active", a ? 1 : 0) }

    func saveHeld(_ h: HeldFiring) throws(StoreError) {
        let s = try db.prepare("""
            INSERT OR REPLACE INTO quiet_held(id, backend, key, title, body, urgency, icon, category, sound, actions, user_info,
              due, fired, occurrence, occurrence_instant, occurrence_offset, reason, alarm)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let f = h.firing
        let n = f.notification
        s.bind(1, h.id); s.bind(2, h.backend); s.bind(3, n.key); s.bind(4, n.title); s.bind(5, n.body)
        s.bind(6, n.urgency.rawValue); s.bind(7, n.icon); s.bind(8, n.category); s.bind(9, n.sound)
        s.bind(10, ListCodec.encode(n.actions.flatMap { [$0.id, $0.label] }))
        s.bind(11, ListCodec.encode(n.userInfo.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }))
        s.bind(12, f.due.microseconds); s.bind(13, f.fired.microseconds)
        s.bind(14, Int64(f.occurrence.number)); s.bind(15, f.occurrence.instant.microseconds)
        s.bind(16, f.occurrence.offset?.microseconds)
        s.bind(17, f.reason.rawValue); s.bind(18, f.isAlarm ? 1 : 0)
        try s.run()
    }

    func deleteHeld(_ ids: [Int64]) throws(StoreError) {
        let s = try db.prepare("DELETE FROM quiet_held WHERE id = ?")
        for id in ids {
            s.bind(1, id)
            try s.run()
        }
    }

    func loadQuiet() throws(StoreError) -> QuietSnapshot {
        var out = QuietSnapshot()
        var state: [String: Int64] = [:]
        let q = try db.prepare("SELECT name, value FROM quiet_state")
        while try q.step() { if let n = q.text(0), let v = q.int(1) { state[n] = v } }
        switch state["override"] {
        case 1: out.override = QuietOverride(on: true, until: state["override_until"].map(Instant.init(microseconds:)))
        case 2: out.override = QuietOverride(on: false, until: state["override_until"].map(Instant.init(microseconds:)))
        default: break
        }
        out.active = state["active"] == 1
        let h = try db.prepare("""
            SELECT id, backend, key, title, body, urgency, icon, category, sound, actions, user_info,
              due, fired, occurrence, occurrence_instant, occurrence_offset, reason, alarm FROM quiet_held ORDER BY id
            """)
        while try h.step() {
            guard let id = h.int(0), let backend = h.text(1), let key = h.text(2) else { continue }
            var n = Notification(key: key, title: h.text(3) ?? "", body: h.text(4) ?? "",
                                 trigger: .at(Instant(microseconds: h.int(11) ?? 0)))
            n.urgency = Urgency(rawValue: h.text(5) ?? "") ?? .normal
            n.icon = h.text(6); n.category = h.text(7); n.sound = h.text(8)
            n.actions = Self.quietPairs(h.text(9)).map { NotificationAction(id: $0.0, label: $0.1) }
            n.userInfo = Dictionary(Self.quietPairs(h.text(10)), uniquingKeysWith: { a, _ in a })
            let occurrence = Occurrence(instant: Instant(microseconds: h.int(14) ?? 0), number: UInt32(clamping: h.int(13) ?? 1),
                                        offset: h.int(15).map(TimeSpan.init(microseconds:)))
            var f = Firing(notification: n, occurrence: occurrence, due: Instant(microseconds: h.int(11) ?? 0),
                           fired: Instant(microseconds: h.int(12) ?? 0),
                           reason: FiringReason(rawValue: h.text(16) ?? "") ?? .scheduled)
            f.isAlarm = h.int(17) == 1
            f.backends = [backend]
            out.held.append(HeldFiring(id: id, backend: backend, firing: f))
        }
        return out
    }

    private static func quietPairs(_ text: String?) -> [(String, String)] {
        let list = ListCodec.decode(text ?? "") ?? []
        return stride(from: 0, to: list.count - 1, by: 2).map { (list[$0], list[$0 + 1]) }
    }
}

extension SQLiteStore {
    public func loadQuiet() async throws(StoreError) -> QuietSnapshot {
        try await worker.run { s throws(StoreError) in try s.loadQuiet() }
    }
}
