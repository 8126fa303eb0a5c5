# frozen_string_literal: true

module FileStorage
  # One page of a listing: its items (`data`, Hashes as the API sends them) and `pagination`
  # (page, per_page, total_items, total_pages, and next_cursor where the listing also pages by cursor).
  Page = Struct.new(:data, :pagination) do
    include Enumerable

    def each(&) = data.each(&)
    def last_page? = data.empty? || pagination['page'] >= pagination['total_pages']
  end

  # Listing helpers shared by every resource with a listing route.
  module Listing
    private

    def fetch_page(path, query)
      envelope = @http.envelope(:get, path, query: query)
      Page.new(envelope['data'], envelope['pagination'])
    end

    # Every item of a listing, page after page, from the page in `query` (default 1) to the last. Where the server
    # answers a `next_cursor`, the following pages are asked by cursor, which never repeats or skips an item while
    # others add and delete; otherwise by page number.
    def each_item(path, query)
      Enumerator.new do |items|
        page = fetch_page(path, query)
        page_number = query.fetch(:page, 1)
        loop do
          page.data.each { |item| items << item }
          if page.pagination.key?('next_cursor')
            break if page.pagination['next_cursor'].nil?

            page = fetch_page(path, query.except(:page).merge(cursor: page.pagination['next_cursor']))
          else
            break if page.last_page?

            page_number += 1
            page = fetch_page(path, query.merge(page: page_number))
          end
        end
      end
    end
  end
end
