public import TocsinCore
import TocsinConfig
import TocsinTime

/// A backend as a conformance case sees it: built from its configuration, started, and named by
/// what the case's findings should say.
public struct BackendUnderTest: Sendable, CustomStringConvertible {
    public let description: String
    /// The name it was configured with (`[backend.NAME]`).
    public let configuredName: String
    public let make: @Sendable () -> any DeliveryBackend
    public init(_ description: String, configuredName: String, make: @escaping @Sendable () -> any DeliveryBackend) {
        self.description = description; self.configuredName = configuredName; self.make = make
    }
}

/// One case of the `DeliveryBackend` contract (`Backend.swift`'s implementation requirements).
public struct BackendConformanceCase: Sendable, CustomStringConvertible {
    public let name: String
    public let run: @Sendable (BackendUnderTest, ConformanceFindings) async throws -> Void
    public var description: String { name }
    public init(_ name: String, _ run: @escaping @Sendable (BackendUnderTest, ConformanceFindings) async throws -> Void) {
        self.name = name; self.run = run
    }
}

/// Cases that hold for every backend that runs without a server or a person: none asserts what
/// a delivery looks like (a line, a program run, a signal), only what the center relies on.
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
        BackendConformanceCase("health() is ok for a backend that cannot know") { b, f in
            let backend = await started(b)
            f.equal(await backend.health(), .ok, "health")
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
        await backend.shutdown()
    }
}
