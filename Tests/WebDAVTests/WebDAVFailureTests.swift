import Foundation
import NIOHTTP1
import SyncEngine
import Testing
@testable import WebDAV

/// Failures that must never look like deletions.
@Suite("WebDAV failures")
struct WebDAVFailureTests {
    @Test("a server that is not there is serverUnreachable, not noSuchItem")
    func unreachable() async throws {
        let endpoint = try WebDAVEndpoint(baseURL: URL(string: "http://127.0.0.1:9/dav/")!, username: "u",
                                          password: "secret-pw", allowInsecureHTTP: false)
        let store = WebDAVStore(endpoint: endpoint)
        do {
            _ = try await store.children(of: .root)
            Issue.record("listing an unreachable server succeeded")
        } catch {
            #expect(error.code == .serverUnreachable)
            #expect(!error.description.contains("secret-pw"))
        }
        await store.shutdown()
    }

    @Test("endpoint rules: https, loopback http, opt-in insecure http, no credentials in the URL")
    func endpointRules() throws {
        #expect(throws: ProviderError.self) {
            try WebDAVEndpoint(baseURL: URL(string: "http://cloud.example.com/dav/")!, username: nil, password: nil, allowInsecureHTTP: false)
        }
        _ = try WebDAVEndpoint(baseURL: URL(string: "http://cloud.example.com/dav/")!, username: nil, password: nil, allowInsecureHTTP: true)
        _ = try WebDAVEndpoint(baseURL: URL(string: "http://localhost:8080/dav/")!, username: nil, password: nil, allowInsecureHTTP: false)
        _ = try WebDAVEndpoint(baseURL: URL(string: "https://cloud.example.com/dav/")!, username: nil, password: nil, allowInsecureHTTP: false)
        #expect(throws: ProviderError.self) {
            try WebDAVEndpoint(baseURL: URL(string: "ftp://cloud.example.com/")!, username: nil, password: nil, allowInsecureHTTP: true)
        }
        do {
            _ = try WebDAVEndpoint(baseURL: URL(string: "https://alice:hunter2@cloud.example.com/")!, username: nil, password: nil, allowInsecureHTTP: false)
            Issue.record("credentials in the URL were accepted")
        } catch {
            #expect(!error.description.contains("hunter2"))
        }
        let endpoint = try WebDAVEndpoint(baseURL: URL(string: "https://h/")!, username: "alice", password: "hunter2", allowInsecureHTTP: false)
        #expect(!"\(endpoint)".contains("hunter2"))
    }

    @Test("status codes map to the engine's error codes", arguments: [
        (401, ProviderError.Code.notAuthenticated), (403, .permissionDenied), (404, .noSuchItem), (409, .parentMissing),
        (412, .versionMismatch), (423, .locked), (507, .insufficientQuota), (500, .serverFailedItem), (501, .serverFailedItem),
        (502, .serverUnreachable), (503, .serverUnreachable), (504, .serverUnreachable), (301, .cannotSynchronize), (418, .cannotSynchronize),
    ])
    func statusMapping(code: Int, expected: ProviderError.Code) {
        #expect(HTTPResponseStatus(statusCode: code).providerError("GET", .root).code == expected)
    }

    @Test("a 500 for a listing is the server failing, not one item: the pass cannot go on without it")
    func listingFailure() {
        #expect(HTTPResponseStatus(statusCode: 500).providerError("PROPFIND", .root).code == .serverUnreachable)
        #expect(HTTPResponseStatus(statusCode: 500).providerError("PUT", .root).disposition == .skipItem)
    }
}
