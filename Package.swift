// swift-tools-version:6.1
// tidesync: two-way folder sync for Linux on the File Provider model. Linux only (Glibc,
// inotify, renameat2, F_SETLEASE): there is no `platforms:` entry, since it can only name
// Apple platforms, and none is supported.
// Arrows point one way: tidesync → Daemon → adapters (StateDatabase, WebDAV,
// LocalStore, TidesyncConfig) → SyncEngine → SyncModel, ContentHash (→ swift-crypto); tidesync
// and Daemon → Control, which depends on no other module. The engine imports no HTTP library,
// SQL driver, inotify or Glibc.
import PackageDescription

let package = Package(
    name: "tidesync",
    products: [
        .executable(name: "tidesync", targets: ["tidesync"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Already built in through async-http-client: a server's own CA (`ca_file`) and an
        // accepted certificate (`certificate_sha256`), and naming a certificate we refuse.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // Already built into every binary through async-http-client: runs the daemon's services.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(name: "SyncModel"),
        .target(name: "SyncEngine", dependencies: ["SyncModel", "ContentHash"]),
        .target(name: "StateDatabase", dependencies: [
            "SyncEngine", "SyncModel",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .target(name: "WebDAV", dependencies: [
            "SyncEngine", "SyncModel", "ContentHash", "SystemCalls",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "LocalStore", dependencies: ["SyncEngine", "SyncModel", "SystemCalls"]),
        // Linux calls that Swift's Glibc module does not declare.
        .target(name: "CSystemCalls"),
        .target(name: "SystemCalls", dependencies: ["CSystemCalls"]),
        // Content digests, pure: swift-crypto's SHA-256, SHA-1 and MD5 behind one small type.
        .target(name: "ContentHash", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Thumbnails of placeholders (issue 17): the EXIF preview finder, the freedesktop cache,
        // and decoding, shrinking and PNG encoding through libjpeg-turbo and libpng (C glue for
        // their setjmp error handling).
        .target(name: "CThumbnailCodecs", linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("png16")]),
        .target(name: "Thumbnails", dependencies: ["CThumbnailCodecs", "ContentHash"]),
        .target(name: "Replica", dependencies: [
            "SyncEngine", "SyncModel", "ContentHash", "SystemCalls", .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "TidesyncConfig", dependencies: [
            "SyncModel", "SystemCalls",
            .product(name: "TOMLKit", package: "TOMLKit"),
        ]),
        .target(name: "Control", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(name: "Daemon", dependencies: [
            "SyncEngine", "SyncModel", "StateDatabase", "WebDAV", "LocalStore", "Replica", "TidesyncConfig", "Control", "SystemCalls",
            "ContentHash", "Thumbnails",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .executableTarget(name: "tidesync", dependencies: [
            "Daemon", "TidesyncConfig", "Replica", "SyncEngine", "Control",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], plugins: ["BuildCommit"]),
        // `tidesync --version`'s git commit, recorded before each build (no git: "unknown commit").
        .plugin(name: "BuildCommit", capability: .buildTool(), path: "packaging/plugins/BuildCommit"),
        // Hashing throughput through `LocalFolder`'s code path (packaging/bench/hash-bench.sh).
        .executableTarget(name: "HashBench", dependencies: ["Replica", "SyncEngine"], path: "packaging/bench/HashBench"),
        // What every test target shares: the seeded generator, the private servers' environment,
        // temporary paths and trees, spawning the real binary and tools, waiting for conditions.
        .target(name: "TestSupport", dependencies: ["SyncModel", "SystemCalls"], path: "Tests/TestSupport"),
        .testTarget(name: "TestSupportTests", dependencies: ["TestSupport"]),
        .testTarget(name: "SyncModelTests", dependencies: ["TestSupport", "SyncModel"]),
        .testTarget(name: "ThumbnailsTests", dependencies: ["TestSupport", "Thumbnails"]),
        .testTarget(name: "SyncEngineTests", dependencies: ["TestSupport", "SyncEngine", "SyncModel"]),
        .testTarget(name: "TidesyncConfigTests", dependencies: ["TestSupport", "TidesyncConfig"]),
        .testTarget(name: "StateDatabaseTests", dependencies: ["TestSupport", "StateDatabase", "SyncEngine", "SyncModel"]),
        .testTarget(name: "CommandLineTests", dependencies: ["TestSupport", "Control", "StateDatabase", "SystemCalls"]),
        .testTarget(name: "ControlTests", dependencies: [
            "TestSupport",
            "Control", "Daemon", "Replica", "StateDatabase", "SyncEngine", "SyncModel", "TidesyncConfig",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ReplicaTests", dependencies: ["TestSupport", "Replica", "SyncEngine", "SystemCalls"]),
        .testTarget(name: "WebDAVTests", dependencies: [
            "TestSupport",
            "WebDAV", "SyncEngine", "SyncModel", .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ]),
        .testTarget(name: "SyncScenarioTests", dependencies: [
            "TestSupport",
            "SyncEngine", "SyncModel", "Replica", "StateDatabase", "WebDAV", "LocalStore", "SystemCalls",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "RemoteStoreContractTests", dependencies: [
            "TestSupport",
            "SyncEngine", "SyncModel", "WebDAV", "LocalStore",
        ]),
    ],
    swiftLanguageModes: [.v6]
)
