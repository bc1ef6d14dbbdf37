import Foundation
import SyncEngine
import Testing

/// The pure bundle rules: which folders are bundles, how a listing collapses, and the
/// version derived from the members.
@Suite struct BundleManifestTests {
    func file(_ path: String, etag: String, size: Int64 = 10) -> RemoteEntry {
        RemoteEntry(path: p(path), kind: .file, size: size, etag: ETag(value: etag))
    }
    func folder(_ path: String, etag: String = "f") -> RemoteEntry {
        RemoteEntry(path: p(path), kind: .folder, size: 0, etag: ETag(value: etag))
    }

    @Test func bundleNamesByExtensionAnyCaseNeverAHiddenFolder() {
        let rule = BundleRule.standard
        #expect(rule.isBundle(name: "Foo.app"))
        #expect(rule.isBundle(name: "Report.PAGES"))
        #expect(rule.isBundle(name: "a.b.framework"))
        #expect(!rule.isBundle(name: ".app"), "a hidden folder, not a bundle")
        #expect(!rule.isBundle(name: "app"))
        #expect(!rule.isBundle(name: "Foo.app.bak"))
        #expect(!rule.isBundle(name: "Foo."))
        #expect(!BundleRule.none.isBundle(name: "Foo.app"))
        #expect(BundleRule(extensions: [".Pkg"]).isBundle(name: "x.pkg"))
    }

    @Test func theOutermostBundleOwnsEverythingBelowIt() {
        let rule = BundleRule.standard
        #expect(rule.enclosingBundle(of: p("A.app/Contents/Frameworks/B.framework/x")) == p("A.app"))
        #expect(rule.enclosingBundle(of: p("docs/A.app/x")) == p("docs/A.app"))
        #expect(rule.enclosingBundle(of: p("docs/A.app")) == nil, "the bundle itself is not inside one")
        #expect(rule.item(for: p("docs/A.app/x/y")) == p("docs/A.app"))
        #expect(rule.item(for: p("docs/plain/y")) == p("docs/plain/y"))
    }

    @Test func aListingCollapsesToOneBundleEntryAndScratchNamesVanish() {
        let listing = [
            folder("A.app"), folder("A.app/Contents"), file("A.app/Contents/x", etag: "1", size: 3),
            RemoteEntry(path: p("A.app/Contents/link"), kind: .symlink, size: 0, etag: ETag(value: "s"), symlinkTarget: "x"),
            file("plain.txt", etag: "p"), folder(".tidesync-bundle-T"), file(".tidesync-bundle-T/y", etag: "9"),
            folder("docs/.tidesync-bundle-U-old"), file("docs/.tidesync-bundle-U-old/z", etag: "8"),
        ]
        let (entries, members, swapping) = BundleManifest.collapse(listing, rule: .standard)
        #expect(swapping == [p("docs")], "a folder holding an old version set aside is being swapped in")
        #expect(Set(entries.map(\.path)) == [p("A.app"), p("plain.txt")])
        let bundle = try! #require(entries.first { $0.path == p("A.app") })
        #expect(bundle.kind == .bundle)
        #expect(bundle.size == 3)
        #expect(members[p("A.app")]?.count == 3)
        #expect(bundle.etag == BundleManifest.version(of: members[p("A.app")]!, below: p("A.app")))
    }

    @Test func theVersionFollowsEveryMemberChangeAndNothingElse() {
        let base = [folder("B.app/c", etag: "1"), file("B.app/c/x", etag: "a"), file("B.app/y", etag: "b")]
        let version = BundleManifest.version(of: base, below: p("B.app"))
        #expect(BundleManifest.version(of: base.reversed(), below: p("B.app")) == version, "listing order does not matter")
        var folderTouched = base
        folderTouched[0] = folder("B.app/c", etag: "2")
        #expect(BundleManifest.version(of: folderTouched, below: p("B.app")) == version, "a folder's own ETag is no change")
        let moved = base.map { e in var e = e; e.path = e.path.replacingPrefix(p("B.app"), with: p("docs/C.app"))!; return e }
        #expect(BundleManifest.version(of: moved, below: p("docs/C.app")) == version, "a moved bundle keeps its version")
        let weak = base.map { e in var e = e; e.etag = e.etag.map { ETag(value: $0.value, isWeak: true) }; return e }
        #expect(BundleManifest.version(of: weak, below: p("B.app")) == version, "weakness is no change")
        let changes: [[RemoteEntry]] = [
            [base[0], file("B.app/c/x", etag: "a2"), base[2]],
            [base[0], file("B.app/c/x", etag: "a", size: 11), base[2]],
            [base[0], file("B.app/c/z", etag: "a"), base[2]],
            Array(base.prefix(2)),
            base + [file("B.app/new", etag: "n")],
        ]
        for changed in changes {
            #expect(BundleManifest.version(of: changed, below: p("B.app")) != version)
        }
    }

    @Test func nfcAndNfdMemberNamesAreTwoMembers() {
        let nfc = file("B.app/caf\u{00E9}", etag: "1"), nfd = file("B.app/cafe\u{0301}", etag: "1")
        #expect(BundleManifest.relative([nfc, nfd], below: p("B.app")).count == 2)
        #expect(BundleManifest.version(of: [nfc], below: p("B.app")) != BundleManifest.version(of: [nfd], below: p("B.app")))
    }
}
