// swift-tools-version: 6.2
import PackageDescription

/// libFuzzer targets, in their own package so the product never carries fuzz-only settings.
///
/// Build through `scripts/fuzz.sh`, which adds `-sanitize=fuzzer,address` for every Swift module
/// (the libraries under test need the coverage instrumentation too, so the flag cannot live on
/// these targets alone). `-parse-as-library` is here: each target's entry point is
/// `LLVMFuzzerTestOneInput`, not top-level code.
let fuzzTarget: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .unsafeFlags(["-parse-as-library"]),
]

let package = Package(
    name: "TocsinFuzz",
    dependencies: [
        .package(name: "Tocsin", path: ".."),
    ],
    targets: [
        // libFuzzer's driver entry, declared for Swift (see FuzzSupport/Entry.swift).
        .target(name: "CFuzzEntry", path: "Sources/CFuzzEntry"),
        .target(
            name: "FuzzSupport",
            dependencies: [
                "CFuzzEntry",
                .product(name: "DBus", package: "Tocsin"),
                .product(name: "TocsinTime", package: "Tocsin"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "fuzz-toml",
            dependencies: ["FuzzSupport", .product(name: "TocsinConfig", package: "Tocsin"), .product(name: "TocsinModel", package: "Tocsin")],
            swiftSettings: fuzzTarget
        ),
        .executableTarget(
            name: "fuzz-config",
            dependencies: ["FuzzSupport", .product(name: "TocsinConfig", package: "Tocsin")],
            swiftSettings: fuzzTarget
        ),
        .executableTarget(
            name: "fuzz-calendar",
            dependencies: ["FuzzSupport", .product(name: "TocsinTime", package: "Tocsin")],
            swiftSettings: fuzzTarget
        ),
        .executableTarget(
            name: "fuzz-time",
            dependencies: ["FuzzSupport", .product(name: "TocsinTime", package: "Tocsin")],
            swiftSettings: fuzzTarget
        ),
        .executableTarget(
            name: "fuzz-wire",
            dependencies: ["FuzzSupport", .product(name: "DBus", package: "Tocsin")],
            swiftSettings: fuzzTarget
        ),
        .executableTarget(
            name: "fuzz-spec",
            dependencies: [
                "FuzzSupport",
                .product(name: "DBus", package: "Tocsin"),
                .product(name: "TocsinConfig", package: "Tocsin"),
                .product(name: "TocsinModel", package: "Tocsin"),
                .product(name: "TocsinGateway", package: "Tocsin"),
            ],
            swiftSettings: fuzzTarget
        ),
    ]
)
