import SyncModel
import Testing

/// Expects `body` to throw a ProviderError with `code`; records an issue at the caller's
/// line when it succeeds or throws anything else.
public func expectCode<T>(_ code: ProviderError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                          _ body: () async throws -> T) async {
    do {
        _ = try await body()
        Issue.record("expected \(code), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as ProviderError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected ProviderError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
