// Hashing throughput through the daemon's own code path: `LocalFolder.digest(ofFileAt:_:)`,
// the function that computes a file's checksum for a server's `oc:checksums` and the
// `sha256:` content hashes of bundle manifests. Run by packaging/bench/hash-bench.sh,
// which times `sha256sum` on the same file in the same run as the reference.
//
//   HashBench FILE [ALGORITHM...]    ALGORITHM: sha256 (default), sha1, md5, adler32
//
// Prints one line per algorithm: `<name> <seconds> <MB/s> <hex>` (MB = 10^6 bytes).
import Foundation
import Replica
import SyncEngine

let arguments = CommandLine.arguments.dropFirst()
guard let file = arguments.first else {
    FileHandle.standardError.write(Data("usage: HashBench FILE [sha256|sha1|md5|adler32]...\n".utf8))
    exit(2)
}
let names = arguments.dropFirst().isEmpty ? ["sha256"] : Array(arguments.dropFirst())
let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
for name in names {
    guard let algorithm = DigestAlgorithm(rawValue: name.uppercased()) else {
        FileHandle.standardError.write(Data("HashBench: unknown algorithm \(name)\n".utf8))
        exit(2)
    }
    let clock = ContinuousClock()
    let start = clock.now
    let hex: String
    do { hex = try LocalFolder.digest(ofFileAt: file, algorithm) } catch {
        FileHandle.standardError.write(Data("HashBench: \(error)\n".utf8))
        exit(1)
    }
    let elapsed = start.duration(to: clock.now)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(name, String(format: "%.3f", seconds), String(format: "%.0f", Double(size) / seconds / 1e6), hex)
}
