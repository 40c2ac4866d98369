import Foundation

/// A private directory (0700) per test, removed when the value goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "tocsin-test") {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/\(prefix)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to a file in the directory and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        let p = path + "/" + name
        try text.write(toFile: p, atomically: true, encoding: .utf8)
        return p
    }
}

/// Where `swift build` put this package's executables: next to the running test binary.
public enum Products: Sendable {
    public static var directory: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test binary may live inside a `.xctest` bundle directory.
        while dir.path.hasSuffix(".xctest") || dir.lastPathComponent == "MacOS" { dir.deleteLastPathComponent() }
        return dir.path
    }

    /// The path of a built executable product, e.g. `tocsin`.
    public static func executable(_ name: String) -> String { directory + "/" + name }
}
