import Foundation

/// The output of a finished child process.
public struct CapturedRun: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs a program to completion and captures its output, for synchronous tests that consult an
/// oracle (`systemd-analyze`, `date`, `python3`). stderr goes through a file, so a chatty child can
/// never block on a full pipe while we read stdout.
public func runBlocking(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> CapturedRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let errPath = NSTemporaryDirectory() + "tocsin-run-\(UUID().uuidString).err"
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errPath) }
    let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    let out = Pipe()
    process.standardOutput = out
    process.standardError = errHandle
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try errHandle.close()
    let err = FileManager.default.contents(atPath: errPath) ?? Data()
    return CapturedRun(status: process.terminationStatus, stdout: String(decoding: data, as: UTF8.self),
                       stderr: String(decoding: err, as: UTF8.self))
}
