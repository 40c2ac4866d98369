import Testing
@testable import TocsinSystem
import TocsinTesting

/// `SQLiteStatement` binds text in place from its arena and skips NULLs that are already NULL:
/// what a row reads back must not depend on either, however values fill the arena, overflow
/// it, or change between uses of the same statement.
@Suite("Binding values to a statement")
struct SQLiteBindingTests {
    /// A table of three text columns and one integer, on a real file.
    final class Table {
        let dir = TemporaryDirectory()
        let db: SQLiteDatabase
        let insert: SQLiteStatement
        let read: SQLiteStatement

        init() throws {
            db = try SQLiteDatabase(path: dir.path + "/t.sqlite3")
            try db.exec("CREATE TABLE t(k TEXT PRIMARY KEY, a TEXT, b TEXT, n INTEGER)")
            insert = try db.prepare("INSERT OR REPLACE INTO t(k, a, b, n) VALUES (?1, ?2, ?3, ?4)")
            read = try db.prepare("SELECT a, b, n FROM t WHERE k = ?1")
        }

        func put(_ k: String, _ a: String?, _ b: String?, _ n: Int64?) throws {
            insert.bind(1, k); insert.bind(2, a); insert.bind(3, b); insert.bind(4, n)
            try insert.run()
        }

        func get(_ k: String) throws -> Row? {
            read.bind(1, k)
            defer { read.reset() }
            guard try read.step() else { return nil }
            return Row(a: read.text(0), b: read.text(1), n: read.int(2))
        }
    }

    struct Row: Equatable, CustomStringConvertible {
        var a: String?
        var b: String?
        var n: Int64?
        var description: String { "(\(Self.show(a)), \(Self.show(b)), \(n.map(String.init) ?? "nil"))" }
        static func show(_ s: String?) -> String {
            guard let s else { return "nil" }
            return s.utf8.count <= 40 ? s.debugDescription : "\(s.utf8.count) bytes from \(String(s.prefix(8)).debugDescription)"
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var a: String?
        var b: String?
        var n: Int64?
        var testDescription: String { name }
    }

    static let long = String(repeating: "ä", count: 1_500)  // 3,000 bytes: more than an arena ever holds
    static let cases: [Case] = [
        Case(name: "short texts and a number", a: "title", b: "body", n: 7),
        Case(name: "NULLs everywhere", a: nil, b: nil, n: nil),
        Case(name: "empty strings are not NULL", a: "", b: "", n: 0),
        Case(name: "one value larger than the arena", a: long, b: "after it", n: 1),
        Case(name: "a value that fits and one that overflows after it", a: String(repeating: "x", count: 1_500), b: String(repeating: "y", count: 1_500), n: 2),
        Case(name: "a key and a value that fill the largest arena exactly, then an empty string", a: String(repeating: "z", count: BindArena.largest - 1), b: "", n: 4),
        Case(name: "text with a NUL inside and non-ASCII", a: "a\u{0}b", b: "grüß 🔔", n: -3),
    ]

    @Test("a row reads back as bound", arguments: cases)
    func roundTrip(_ c: Case) throws {
        let t = try Table()
        try t.put("k", c.a, c.b, c.n)
        #expect(try t.get("k") == Row(a: c.a, b: c.b, n: c.n), "\(c.name)")
    }

    @Test("reusing the statement: every row keeps its own values, NULLs included")
    func reuse() throws {
        let t = try Table()
        // Twice over: the first round grows the arena, the second binds into the grown one.
        for round in 0..<2 {
            for (i, c) in Self.cases.enumerated() { try t.put("w\(round)-\(i)", c.a, c.b, c.n) }
        }
        // Each use after the first rebinds over the last one's values and arena bytes.
        for (i, c) in Self.cases.enumerated() { try t.put("k\(i)", c.a, c.b, c.n) }
        for (i, c) in Self.cases.reversed().enumerated() { try t.put("r\(i)", c.a, c.b, c.n) }
        for (i, c) in Self.cases.enumerated() {
            #expect(try t.get("k\(i)") == Row(a: c.a, b: c.b, n: c.n), "\(c.name)")
        }
        for (i, c) in Self.cases.reversed().enumerated() {
            #expect(try t.get("r\(i)") == Row(a: c.a, b: c.b, n: c.n), "\(c.name), reversed")
        }
    }

    @Test("NULL bound over a value before the statement runs replaces it")
    func nullOverValue() throws {
        let t = try Table()
        t.insert.bind(1, "k"); t.insert.bind(2, "first"); t.insert.bind(3, "kept"); t.insert.bind(4, 5)
        t.insert.bind(2, nil as String?); t.insert.bind(4, nil as Int64?)
        try t.insert.run()
        #expect(try t.get("k") == Row(a: nil, b: "kept", n: nil))
    }

    @Test("a value bound over another before the statement runs replaces it, in or out of the arena")
    func valueOverValue() throws {
        let t = try Table()
        t.insert.bind(1, "k"); t.insert.bind(2, "first"); t.insert.bind(3, Self.long); t.insert.bind(4, 1)
        t.insert.bind(2, Self.long); t.insert.bind(3, "second")
        try t.insert.run()
        #expect(try t.get("k") == Row(a: Self.long, b: "second", n: 1))
    }

    @Test("a statement that fails is reset, and its next use binds afresh")
    func afterFailure() throws {
        let t = try Table()
        try t.db.exec("CREATE TABLE strict(k TEXT PRIMARY KEY, v TEXT NOT NULL)")
        let s = try t.db.prepare("INSERT INTO strict(k, v) VALUES (?1, ?2)")
        s.bind(1, "k"); s.bind(2, nil as String?)
        #expect(throws: StoreError.self) { try s.run() }
        s.bind(1, "k"); s.bind(2, "v")
        try s.run()
        let read = try t.db.prepare("SELECT v FROM strict WHERE k = ?1")
        read.bind(1, "k")
        defer { read.reset() }
        #expect(try read.step())
        #expect(read.text(0) == "v")
    }

    static func key(_ i: Int) -> String { i < 10 ? "k0\(i)" : "k\(i)" }

    @Test("a bound text is read on every step of a query over many rows")
    func boundAcrossSteps() throws {
        let t = try Table()
        for i in 0..<50 { try t.put(Self.key(i), "a\(i)", nil, Int64(i)) }
        let q = try t.db.prepare("SELECT k FROM t WHERE k > ?1 AND a != ?2 ORDER BY k")
        q.bind(1, "k09"); q.bind(2, "a20")
        defer { q.reset() }
        var keys: [String] = []
        while try q.step() { keys.append(q.text(0) ?? "nil") }
        #expect(keys == (10..<50).filter { $0 != 20 }.map { Self.key($0) })
    }

    struct GrowthRow: Sendable, CustomTestStringConvertible {
        var name: String
        var sizes: [Int]
        /// The block's size after the use that bound `sizes`.
        var capacityAfter: Int
        var testDescription: String { name }
    }

    static let growthRows: [GrowthRow] = [
        GrowthRow(name: "values that fit: no growth", sizes: [10, 20, 30], capacityAfter: BindArena.smallest),
        GrowthRow(name: "an exact fit: no growth", sizes: [BindArena.smallest], capacityAfter: BindArena.smallest),
        GrowthRow(name: "one byte over: doubled", sizes: [BindArena.smallest, 1], capacityAfter: 2 * BindArena.smallest),
        GrowthRow(name: "a kilobyte in all: to the next power of two", sizes: [400, 400, 200], capacityAfter: 1024),
        GrowthRow(name: "far more than the largest: the largest", sizes: [100_000], capacityAfter: BindArena.largest),
    ]

    @Test("the arena keeps what fits, refuses the rest, and grows to what a use wanted at the next rewind", arguments: growthRows)
    func growth(_ row: GrowthRow) {
        let arena = BindArena()
        var kept: [(pointer: UnsafePointer<CChar>, size: Int, fill: CChar)] = []
        for (i, size) in row.sizes.enumerated() {
            let fill = CChar(65 + i)
            let bytes = [UInt8](repeating: UInt8(fill), count: size)
            if let p = bytes.withUnsafeBufferPointer({ arena.keep($0) }) { kept.append((p, size, fill)) }
        }
        // What was kept does not overlap, and holds its own bytes, until the rewind.
        for k in kept {
            #expect(UnsafeBufferPointer(start: k.pointer, count: k.size).allSatisfy { $0 == k.fill }, "\(row.name): value \(k.fill)")
        }
        #expect(kept.map(\.size).reduce(0, +) <= BindArena.smallest, "\(row.name)")
        arena.rewind()
        #expect(arena.capacity == row.capacityAfter, "\(row.name)")
    }
}
