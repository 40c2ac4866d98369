// swift-tools-version: 6.2
import PackageDescription

/// An app outside the Tocsin tree that uses its client library: `scripts/test-swift-client-app.sh`
/// copies this directory elsewhere and points the dependency at the checkout (`@TOCSIN_PATH@`).
let package = Package(
    name: "Reminders",
    dependencies: [
        .package(name: "Tocsin", path: "@TOCSIN_PATH@"),
    ],
    targets: [
        .target(name: "Reminders", dependencies: [.product(name: "TocsinClient", package: "Tocsin")]),
        .executableTarget(name: "reminders-demo", dependencies: ["Reminders", .product(name: "TocsinClient", package: "Tocsin")]),
        .testTarget(name: "RemindersTests", dependencies: [
            "Reminders",
            .product(name: "TocsinClient", package: "Tocsin"),
            .product(name: "TocsinClientTesting", package: "Tocsin"),
        ]),
    ]
)
