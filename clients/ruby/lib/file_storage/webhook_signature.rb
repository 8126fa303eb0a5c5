# frozen_string_literal: true

require 'openssl'

module FileStorage
  # Verifies webhook deliveries (docs/webhooks.md, "Verifying the signature").
  module Webhook
    module_function

    # Whether a delivery is genuine: its X-Service-Signature header must be `sha256=` + the hex HMAC-SHA256 of the
    # raw request body, keyed with the webhook's secret. Pass the body exactly as received, before parsing it.
    # `headers` is any Hash-like of header names (any case) to values. Compared in constant time.
    def verify(raw_body, headers, secret)
      header = read_header(headers, 'x-service-signature')
      match = header && /\Asha256=([0-9a-f]{64})\z/.match(header.strip)
      return false unless match

      expected = OpenSSL::HMAC.hexdigest('SHA256', secret, raw_body.to_s)
      OpenSSL.fixed_length_secure_compare(expected, match[1])
    end

    STANDARD_PREFIX = 'whsec_'
    # Canonical standard base64 with padding, as the Standard Webhooks libraries decode it.
    CANONICAL_BASE64 = %r{\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\z}

    # Whether a delivery is genuine by its Standard Webhooks headers: one of the `v1,` signatures in
    # webhook-signature must be the base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{raw body}", and
    # webhook-timestamp within `tolerance` seconds of `now` (a captured delivery cannot be replayed later). Give the
    # secret exactly as shown at creation or rotation, or several (the old and the new during a rotation). A
    # `whsec_` secret in canonical base64 is keyed by its decoded bytes, any other by its UTF-8 bytes, as the service
    # signs (docs/webhooks.md). Compared in constant time.
    def verify_standard(raw_body, headers, secrets, tolerance: 300, now: Time.now)
      id = read_header(headers, 'webhook-id')
      timestamp = read_header(headers, 'webhook-timestamp')
      signatures = read_header(headers, 'webhook-signature')
      return false unless id && signatures && timestamp.to_s.match?(/\A\d{1,15}\z/)
      return false if (now.to_i - timestamp.to_i).abs > tolerance

      message = "#{id}.#{timestamp}.#{raw_body}"
      candidates = signatures.split(' ').filter_map { |one| one.delete_prefix('v1,') if one.start_with?('v1,') }
      Array(secrets).any? do |secret|
        expected = [OpenSSL::HMAC.digest('SHA256', standard_key(secret), message)].pack('m0')
        candidates.any? { |candidate| candidate.bytesize == expected.bytesize && OpenSSL.fixed_length_secure_compare(candidate, expected) }
      end
    end

    def standard_key(secret)
      encoded = secret.delete_prefix(STANDARD_PREFIX)
      if secret.start_with?(STANDARD_PREFIX) && encoded.match?(CANONICAL_BASE64)
        key = encoded.unpack1('m0')
        return key if key.bytesize.between?(24, 64)
      end
      secret.b
    end

    def read_header(headers, name)
      headers.each do |key, value|
        return value.is_a?(Array) ? value.first : value if key.to_s.downcase.tr('_', '-').sub(/\Ahttp-/, '') == name
      end
      nil
    end
  end
end
