import Foundation

/// HTTP dates (RFC 9110 §5.6.7). Listings carry one per entry, so the usual form,
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), is parsed by hand: a `DateFormatter`
/// per entry cost half the CPU of a 10 000-file listing. The two obsolete forms go
/// through a formatter made once.
enum HTTPDate {
    private static let months: [String: Int] = [
        "Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
        "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12,
    ]

    /// The date, or nil when `text` is no HTTP date.
    static func parse(_ text: String) -> Date? {
        fixdate(Array(text.utf8)) ?? obsolete(text)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, exactly 29 bytes.
    static func fixdate(_ b: [UInt8]) -> Date? {
        guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
              b[19] == 0x3A, b[22] == 0x3A, b[25] == 0x20, b[26...28].elementsEqual("GMT".utf8),
              let day = number(b[5..<7]), let year = number(b[12..<16]), let hour = number(b[17..<19]),
              let minute = number(b[20..<22]), let second = number(b[23..<25]),
              let month = months[String(decoding: b[8..<11], as: UTF8.self)],
              (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86400 + hour * 3600 + minute * 60 + second))
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            value = value * 10 + Int(digit - 0x30)
        }
        return value
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static let obsoleteFormats: [String] = ["EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]

    private static func obsolete(_ text: String) -> Date? {
        for format in obsoleteFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
