public import TocsinCore
import TocsinConfig
import TocsinTime

/// What a backend declares about itself where the `DeliveryBackend` contract leaves a choice.
/// A case that depends on one of these says so, and runs only against backends that match: the
/// table of rows is built from the declarations, so nothing is skipped at run time.
public struct BackendCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `health()` asks a server it depends on (a service on the bus, the notification server):
    /// with that server up, as the suite's fixture keeps it, the answer is `.ok`.
    public static let watchesItsServer = BackendCapabilities(rawValue: 1 << 0)
    /// Connects in the background after `start` and queues deliveries meanwhile (mqtt): `health()`
    /// may say it is not connected yet, with a reason, and an unreachable server never fails a
    /// delivery (so it has no failing configuration to test).
    public static let connectsInBackground = BackendCapabilities(rawValue: 1 << 1)
}

/// A backend as a conformance case sees it: built from its configuration, started, and named by
/// what the case's findings should say.
public struct BackendUnderTest: Sendable, CustomStringConvertible {
    public let description: String
    /// The name it was configured with (`[backend.NAME]`).
    public let configuredName: String
    public let capabilities: BackendCapabilities
    public let make: @Sendable () -> any DeliveryBackend
    public init(_ description: String, configuredName: String, capabilities: BackendCapabilities = [],
                make: @escaping @Sendable () -> any DeliveryBackend) {
        self.description = description; self.configuredName = configuredName; self.capabilities = capabilities; self.make = make
    }
}

/// One case of the `DeliveryBackend` contract (`Backend.swift`'s implementation requirements).
public struct BackendConformanceCase: Sendable, CustomStringConvertible {
    public let name: String
    /// Which backends the case is about, from what they declare.
    public let applies: @Sendable (BackendCapabilities) -> Bool
    public let run: @Sendable (BackendUnderTest, ConformanceFindings) async throws -> Void
    public var description: String { name }
    public init(_ name: String, applies: @escaping @Sendable (BackendCapabilities) -> Bool = { _ in true },
                _ run: @escaping @Sendable (BackendUnderTest, ConformanceFindings) async throws -> Void) {
        self.name = name; self.applies = applies; self.run = run
    }
}

/// One row of a conformance table: a backend and a case that applies to it, named by both.
public struct BackendConformanceRow: Sendable, CustomStringConvertible {
    public let backend: BackendUnderTest
    public let check: BackendConformanceCase
    public var description: String { "\(backend): \(check.name)" }
}

/// Cases that hold for every backend, with or without a server (the ones that need one run them
/// with a real server up): none asserts what a delivery looks like (a line, a program run, a
/// signal, a popup), only what the center relies on. A case that depends on a declared
/// `BackendCapabilities` says so in `applies`.
public enum BackendConformance: Sendable {
    /// Takes whatever a backend sends the center; the cases send no input, so it stays unused.
    public struct IgnoringSink: BackendEventSink {
        public init() {}
        public func send(_ event: BackendEvent) {}
    }

    static let withdrawReasons: [WithdrawReason] = [.cancelled, .acknowledged, .snoozed, .replaced, .unanswered, .shutdown]

    /// A firing of each reason, so a backend that only handles `.scheduled` shows.
    public static func firings(key: String = "conformance") -> [Firing] {
        let t0 = StoreConformance.t0
        let n = StoreConformance.sample(key)
        let reasons: [FiringReason] = [.scheduled, .late, .postNow, .snoozeEnded, .ring, .quietEnded]
        return reasons.enumerated().map { i, reason in
            var f = Firing(notification: n, occurrence: Occurrence(instant: t0, number: UInt32(i + 1)),
                           due: t0, fired: t0 + .seconds(Int64(i)), reason: reason)
            f.backends = ["under-test"]
            return f
        }
    }

    static func started(_ b: BackendUnderTest) async -> any DeliveryBackend {
        let backend = b.make()
        await backend.start(events: IgnoringSink())
        return backend
    }

    public static let cases: [BackendConformanceCase] = [
        BackendConformanceCase("name is the configured one") { b, f in
            let backend = await started(b)
            f.equal(backend.name, b.configuredName, "name")
            await backend.shutdown()
        },
        BackendConformanceCase("deliver returns for a firing of every reason") { b, f in
            let backend = await started(b)
            for firing in firings() {
                do throws(DeliveryError) { try await backend.deliver(firing) } catch {
                    f.expect(false, "deliver of a \(firing.reason.rawValue) firing threw \(error.code): \(error.message)")
                }
            }
            await backend.shutdown()
        },
        BackendConformanceCase("withdraw of a key it never saw returns, twice, for every reason; delivery still works after") { b, f in
            let backend = await started(b)
            for reason in withdrawReasons {
                await backend.withdraw(key: "never-delivered", reason: reason)
                await backend.withdraw(key: "never-delivered", reason: reason)
                await backend.withdraw(key: "never-delivered", reason: reason, snoozedUntil: StoreConformance.t0)
            }
            let firing = firings()[0]
            do throws(DeliveryError) { try await backend.deliver(firing) } catch {
                f.expect(false, "deliver after withdrawals threw \(error.code): \(error.message)")
            }
            await backend.withdraw(key: firing.key, reason: .acknowledged)
            await backend.withdraw(key: firing.key, reason: .acknowledged)
            await backend.shutdown()
        },
        BackendConformanceCase("health() is ok for a backend that cannot know",
                               applies: { $0.isDisjoint(with: [.watchesItsServer, .connectsInBackground]) }) { b, f in
            let backend = await started(b)
            f.equal(await backend.health(), .ok, "health")
            await backend.shutdown()
        },
        BackendConformanceCase("health() is ok while its server is up", applies: { $0.contains(.watchesItsServer) }) { b, f in
            let backend = await started(b)
            f.equal(await backend.health(), .ok, "health")
            await backend.shutdown()
        },
        BackendConformanceCase("health() is ok, or unavailable with a reason while it connects",
                               applies: { $0.contains(.connectsInBackground) }) { b, f in
            let backend = await started(b)
            switch await backend.health() {
            case .ok: break
            case .unavailable(let reason): f.expect(!reason.isEmpty, "unavailable without a reason")
            }
            await backend.shutdown()
        },
        // What fails here is a hang: the suite runs each case under a deadline.
        BackendConformanceCase("shutdown returns, and returns again when repeated") { b, _ in
            let backend = await started(b)
            try? await backend.deliver(firings()[0])
            await backend.shutdown()
            await backend.shutdown()
        },
    ]

    /// Every case that applies to each backend, as rows for a parameterized test.
    public static func rows(_ backends: [BackendUnderTest]) -> [BackendConformanceRow] {
        backends.flatMap { b in cases.filter { $0.applies(b.capabilities) }.map { BackendConformanceRow(backend: b, check: $0) } }
    }

    /// For a backend configured so its deliveries fail: the error is a `DeliveryError` the
    /// center can act on, a known code and a message a person can read.
    public static func checkFailure(_ b: BackendUnderTest, _ f: ConformanceFindings) async {
        let backend = await started(b)
        let known: [DeliveryError.Code] = [.unavailable, .failed, .timedOut, .permanent]
        do throws(DeliveryError) {
            try await backend.deliver(firings()[0])
            f.expect(false, "deliver succeeded")
        } catch {
            f.expect(known.contains(error.code), "code \(error.code) is not one the center knows")
            f.expect(!error.message.isEmpty, "the error has no message")
        }
        if b.capabilities.contains(.watchesItsServer) {
            f.expect(await backend.health() != .ok, "health is ok although its server is not there")
        }
        await backend.shutdown()
    }
}
