// swift-tools-version: 6.2
import PackageDescription

/// Every Swift target builds in Swift 6 mode with complete concurrency checking:
/// the daemon's threads (scheduler, D-Bus loop, GLib loop, players) meet in shared state,
/// and the compiler is the cheapest reviewer of that.
///
/// The rest follows swift-log: every file imports each module whose members it uses
/// (MemberImportVisibility), a plain `import` is internal so clients see only the modules its
/// public API names (InternalImportsByDefault), and every public type says whether it is
/// `Sendable` (the ExplicitSendable diagnostic group, which is off by default). swift-log turns
/// that one on with `-require-explicit-sendable` in `unsafeFlags`; `treatWarning` enables the
/// same group without unsafe flags, which this package keeps out since others depend on it
/// (Fuzz/ and Benchmarks/ do).
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .warning),
]

let package = Package(
    name: "Tocsin",
    products: [
        .executable(name: "tocsin", targets: ["tocsin"]),
        .executable(name: "toml-test-decoder", targets: ["toml-test-decoder"]),
        .library(name: "TocsinTime", targets: ["TocsinTime"]),
        .library(name: "TocsinModel", targets: ["TocsinModel"]),
        .library(name: "TocsinConfig", targets: ["TocsinConfig"]),
        .library(name: "TocsinSystem", targets: ["TocsinSystem"]),
        .library(name: "TocsinCore", targets: ["TocsinCore"]),
        .library(name: "TocsinTesting", targets: ["TocsinTesting"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "TocsinGateway", targets: ["TocsinGateway"]),
        .library(name: "TocsinDBusSignalBackend", targets: ["TocsinDBusSignalBackend"]),
        // For apps: the client and its test double (see "MARK: Client libraries").
        .library(name: "TocsinClient", targets: ["TocsinClient"]),
        .library(name: "TocsinClientTesting", targets: ["TocsinClientTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        // MARK: C libraries and shims
        // Headers only (libsqlite3-dev): lazy.c loads libsqlite3 on first use, so only the daemon,
        // which keeps state, loads it; every other command starts without it.
        .target(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CDBus", path: "Sources/CDBus", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),
        .target(name: "CTocsinSystem", path: "Sources/CTocsinSystem"),
        // Headers only (libmosquitto-dev): lazy.c loads libmosquitto on first use, so the
        // executable does not link it and commands that never touch MQTT do not load it.
        .target(name: "CMosquitto", path: "Sources/CMosquitto"),
        // Declarations and a loader (lazy.c): libnotify and its GLib stack load on first use, so
        // the executable does not link them and the CLI commands do not load them.
        .target(name: "CLibNotify", path: "Sources/CLibNotify"),

        // MARK: The model: what a notification, a policy, a limit and a setting are. No I/O.
        .target(name: "TocsinTime", swiftSettings: strict),
        .target(name: "TocsinModel", dependencies: ["TocsinTime"], swiftSettings: strict),

        // MARK: The system: the executor loop, threads, processes, timers and the SQLite wrapper.
        .target(
            name: "TocsinSystem",
            dependencies: ["TocsinTime", "CSQLite", "CTocsinSystem", .product(name: "HeapModule", package: "swift-collections")],
            swiftSettings: strict
        ),

        // MARK: The engine: the notification machine, the center, the store and backend protocols.
        // It knows the model, never the file the model came from (no TOML parser here).
        .target(
            name: "TocsinCore",
            dependencies: [
                "TocsinTime", "TocsinModel", "TocsinSystem", "CTocsinSystem",
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // MARK: The config file: our TOML parser and the reading of a file into the model.
        .target(name: "TocsinConfig", dependencies: ["TocsinTime", "TocsinModel", "TocsinSystem"], swiftSettings: strict),

        // MARK: D-Bus: our libdbus layer (the daemon and the client library share it).
        .target(name: "DBus", dependencies: ["CDBus", "CTocsinSystem"], swiftSettings: strict),

        // MARK: The daemon: the D-Bus service, the config plan, backend tables, lifecycle.
        .target(
            name: "TocsinGateway",
            dependencies: [
                "DBus", "TocsinCore", "TocsinModel", "TocsinSystem", "TocsinConfig", "TocsinTime", "CTocsinSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // MARK: Test kit: spies, virtual clock, private buses, conformance suites.
        .target(name: "TocsinTesting", dependencies: ["TocsinCore", "TocsinModel", "TocsinSystem", "TocsinConfig", "TocsinTime",
                                                     .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),

        // MARK: Delivery backends, one target each
        .target(
            name: "TocsinLogBackend",
            dependencies: ["TocsinCore", "TocsinModel", "TocsinSystem", "TocsinTime", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/Log",
            swiftSettings: strict
        ),
        .target(
            name: "TocsinExecBackend",
            dependencies: [
                "TocsinCore", "TocsinModel", "TocsinSystem", "TocsinTime",
            ],
            path: "Plugins/Exec",
            swiftSettings: strict
        ),

        .target(
            name: "TocsinDBusSignalBackend",
            dependencies: ["TocsinCore", "TocsinModel", "TocsinSystem"],
            path: "Plugins/DBusSignal",
            swiftSettings: strict
        ),

        // Talks to the daemon's bus connection through the DBus module: out-of-process backends.
        .target(
            name: "TocsinDBusServiceBackend",
            dependencies: ["TocsinCore", "TocsinModel", "TocsinSystem", "TocsinTime", "DBus", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/DBusService",
            swiftSettings: strict
        ),

        .target(
            name: "TocsinDesktopBackend",
            dependencies: ["TocsinCore", "TocsinModel", "TocsinSystem", "TocsinTime", "CLibNotify", "DBus", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/Desktop",
            swiftSettings: strict
        ),
        .target(
            name: "TocsinSoundBackend",
            dependencies: [
                "TocsinCore", "TocsinModel", "TocsinSystem", "TocsinTime",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Plugins/Sound",
            swiftSettings: strict
        ),

        .target(
            name: "TocsinMQTTBackend",
            dependencies: ["TocsinCore", "TocsinModel", "TocsinSystem", "TocsinTime", "CMosquitto",
                           .product(name: "Logging", package: "swift-log")],
            path: "Plugins/MQTT",
            swiftSettings: strict
        ),

        // MARK: Client libraries
        // What an app links: the D-Bus layer and the client, never the daemon's modules. The double
        // adds TocsinTime (pure Swift, no dependencies) to compute firings as the daemon does.
        .target(name: "TocsinClient", dependencies: ["DBus"], swiftSettings: strict),
        .target(name: "TocsinClientTesting", dependencies: ["TocsinClient", "TocsinTime"], swiftSettings: strict),

        // MARK: Executables
        .executableTarget(
            name: "tocsin",
            dependencies: [
                "CTocsinSystem", "TocsinCore", "TocsinConfig", "TocsinModel", "TocsinSystem", "TocsinTime",
                "TocsinLogBackend", "TocsinExecBackend", "TocsinDBusSignalBackend", "TocsinDBusServiceBackend", "TocsinDesktopBackend", "TocsinSoundBackend", "TocsinMQTTBackend", "TocsinGateway", "DBus",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "toml-test-decoder", dependencies: ["TocsinConfig", "TocsinModel"], swiftSettings: strict),

        // MARK: Tests
        .testTarget(name: "TocsinTimeTests", dependencies: ["TocsinTime", "TocsinTesting"], swiftSettings: strict),
        .testTarget(name: "TocsinConfigTests", dependencies: ["TocsinConfig", "TocsinModel", "TocsinSystem", "TocsinTime", "TocsinTesting"], swiftSettings: strict),
        .testTarget(name: "TocsinCoreTests", dependencies: ["TocsinCore", "TocsinTesting", "TocsinTime", "TocsinConfig", "TocsinModel", "TocsinSystem",
                                                           .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TocsinTesting"], swiftSettings: strict),
        .testTarget(name: "PluginTests", dependencies: ["TocsinLogBackend", "TocsinExecBackend", "TocsinDBusServiceBackend", "TocsinDBusSignalBackend", "DBus", "TocsinTesting", "TocsinCore", "TocsinConfig", "TocsinModel", "TocsinSystem", "TocsinTime",
                                                       .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
        .testTarget(name: "DesktopBackendTests", dependencies: ["TocsinGateway", "TocsinDesktopBackend", "TocsinCore", "TocsinConfig", "TocsinModel", "TocsinSystem", "TocsinTime",
                                                               .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
        .testTarget(name: "SoundBackendTests", dependencies: ["TocsinGateway", "TocsinSoundBackend", "TocsinTesting", "TocsinCore", "TocsinConfig", "TocsinModel", "TocsinSystem", "TocsinTime",
                                                             .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
        .testTarget(name: "MQTTBackendTests", dependencies: ["TocsinGateway", "TocsinMQTTBackend", "TocsinTesting", "TocsinCore", "TocsinConfig", "TocsinModel", "TocsinSystem", "TocsinTime",
                                                            .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
        // One conformance suite for the client and its double; the client against the built daemon.
        .testTarget(name: "TocsinClientTests", dependencies: ["TocsinClient", "TocsinClientTesting", "TocsinTesting", "DBus"],
                    swiftSettings: strict),
        // Drives the built `tocsin` executable, and runs the whole daemon in-process (DaemonInProcessTests).
        .testTarget(name: "IntegrationTests", dependencies: ["TocsinTesting", "TocsinTime", "TocsinConfig", "TocsinModel", "TocsinSystem", "TocsinCore", "TocsinGateway", "DBus",
                                                          "TocsinDBusSignalBackend", "TocsinDBusServiceBackend",
                                                          // For the backend conformance suite with real servers (ServedBackendConformanceTests).
                                                          "TocsinDesktopBackend", "TocsinSoundBackend", "TocsinMQTTBackend",
                                                          .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
    ]
)
