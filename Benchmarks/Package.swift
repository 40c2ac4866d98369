// swift-tools-version: 6.2
import PackageDescription

/// Benchmarks live in their own package so that only they depend on the libraries they compare
/// against (TOMLKit): the product itself never links them.
let package = Package(
    name: "TocsinBenchmarks",
    dependencies: [
        .package(name: "Tocsin", path: ".."),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // One file per subcommand (ParseBenchmark.swift, ...), registered in TocsinBench.swift.
        .executableTarget(
            name: "tocsin-bench",
            dependencies: [
                .product(name: "TocsinConfig", package: "Tocsin"),
                .product(name: "TocsinModel", package: "Tocsin"),
                .product(name: "TocsinSystem", package: "Tocsin"),
                .product(name: "TocsinTime", package: "Tocsin"),
                .product(name: "TocsinCore", package: "Tocsin"),
                .product(name: "TocsinTesting", package: "Tocsin"),
                .product(name: "TocsinGateway", package: "Tocsin"),
                .product(name: "TocsinDBusSignalBackend", package: "Tocsin"),
                .product(name: "DBus", package: "Tocsin"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
