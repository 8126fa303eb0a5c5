# frozen_string_literal: true

require 'securerandom'
require 'stringio'

module FileStorage
  # What `files.upload` takes, opened: its name and size when known, and its bytes, again if it can be reopened.
  # A path (String or Pathname) and a seekable IO (a File, a StringIO) can be read again (for a retry or a tus chunk),
  # from where the IO stood when given; any other IO (a pipe, a socket) only once.
  class UploadSource
    attr_reader :name, :size

    def self.open(source)
      if source.is_a?(String) || (defined?(Pathname) && source.is_a?(Pathname))
        path = source.to_s
        new(name: File.basename(path), size: File.size(path), path: path)
      elsif source.respond_to?(:read)
        origin = seekable_origin(source)
        size = source.respond_to?(:size) ? source.size : nil
        # A seekable IO is sent from where it stands: what is left of it.
        size -= origin if size && origin
        name = source.respond_to?(:path) && source.path ? File.basename(source.path) : nil
        new(name: name, size: size, io: source, origin: origin)
      else
        raise ArgumentError, 'upload takes a file path or an IO (anything with #read).'
      end
    end

    # Where a seekable IO stands, or nil for one that cannot seek (a pipe or a socket raises on #pos).
    def self.seekable_origin(io)
      return nil unless io.respond_to?(:seek) && io.respond_to?(:pos)

      io.pos
    rescue IOError, SystemCallError
      nil
    end

    def initialize(name:, size:, path: nil, io: nil, origin: nil)
      @name = name
      @size = size
      @path = path
      @io = io
      @origin = origin
      @used = false
    end

    def replayable? = !@path.nil? || (!@origin.nil? && !@size.nil?)

    # An IO over the bytes [start, finish); the caller closes it. A stream that cannot seek can be read once, from
    # where it is.
    def reader(start = 0, finish = @size)
      if @path
        file = File.open(@path, 'rb')
        file.seek(start)
        return finish.nil? ? file : LimitedReader.new(file, finish - start, owned: true)
      end
      if replayable?
        @io.seek(@origin + start)
        return LimitedReader.new(@io, finish - start, owned: false)
      end
      raise ArgumentError, 'A stream source can be read only once.' if @used

      @used = true
      LimitedReader.new(@io, nil, owned: false)
    end

    # Bytes [start, finish) of a path or a seekable IO, read into memory: one tus chunk, bounded by the chunk size.
    def chunk(start, finish)
      return read_chunk(@io, @origin + start, finish - start) unless @path

      File.open(@path, 'rb') { |file| read_chunk(file, start, finish - start) }
    end

    private

    def read_chunk(io, at, length)
      io.seek(at)
      (io.read(length) || '').b
    end
  end

  # Reads at most `limit` bytes of an IO (all of it when nil); closes the IO only if it owns it.
  class LimitedReader
    def initialize(io, limit, owned:)
      @io = io
      @left = limit
      @owned = owned
    end

    def read(length = nil, buffer = nil)
      if @left
        return nil if @left <= 0

        length = length ? [length, @left].min : @left
      end
      data = @io.read(length, buffer)
      @left -= data.bytesize if data && @left
      data
    end

    def close
      @io.close if @owned
    end
  end

  # A multipart/form-data body produced as a stream: the fields, then the file's bytes as they are read, then the
  # closing boundary. The file is never held whole in memory.
  class MultipartBody
    SLICE = 64 * 1024

    def self.build(source, filename, fields, on_progress: nil)
      boundary = "----FileStorageRuby#{SecureRandom.hex(16)}"
      head = +''
      fields.each do |key, value|
        next if value.nil?

        head << "--#{boundary}\r\nContent-Disposition: form-data; name=\"#{key}\"\r\n\r\n#{value}\r\n"
      end
      head << "--#{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"#{escape(filename)}\"\r\n" \
              "Content-Type: application/octet-stream\r\n\r\n"
      tail = "\r\n--#{boundary}--\r\n"
      size = source.size && (head.bytesize + source.size + tail.bytesize)
      RequestBody.new(
        opener: -> { new(head.b, source.reader, tail.b, source.size, on_progress) },
        size: size,
        content_type: "multipart/form-data; boundary=#{boundary}",
        replayable: source.replayable?
      )
    end

    # Quotes and CR/LF would end the header early; the server takes the name from the `filename` parameter.
    def self.escape(filename) = filename.gsub(/["\r\n\\]/) { |c| "%#{c.ord.to_s(16).upcase}" }

    def initialize(head, file, tail, total, on_progress)
      @parts = [StringIO.new(head), file, StringIO.new(tail)]
      @file = file
      @total = total
      @loaded = 0
      @on_progress = on_progress
    end

    def read(length = SLICE, buffer = nil)
      length ||= SLICE
      while (part = @parts.first)
        data = part.read(length)
        if data.nil? || data.empty?
          @parts.shift
          next
        end
        if part.equal?(@file)
          @loaded += data.bytesize
          @on_progress&.call(@loaded, @total)
        end
        return buffer ? buffer.replace(data) : data
      end
      nil
    end

    def readpartial(length = SLICE, buffer = nil)
      read(length, buffer) || raise(EOFError)
    end

    def close
      @file.close
    end
  end
end
